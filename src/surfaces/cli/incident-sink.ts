import type { AlertRecord } from '../../domain/alerts/lifecycle.js';
import type { CoveringIncident, IncidentSink } from '../../domain/alerts/manager.js';
import { alertImpactSince } from '../../domain/alerts/rules.js';
import type { IncidentService } from '../../domain/incidents/service.js';

/**
 * Alerts meet incidents here: the alert rules ask for the open incident covering an alert (its
 * thread is where the alert is posted) and report the alert's events, which go on that incident's
 * timeline (and the first one marks `detected`). An incident declared from the terminal has no
 * thread: the alert still goes on its timeline, and is posted to the alerts channel.
 */
export function incidentSink(incidents: IncidentService | undefined): IncidentSink | undefined {
  if (!incidents) return undefined;
  const record = (incidentId: string, alert: AlertRecord, event: 'fired' | 'worse' | 'resolved') => {
    const impactSince = event === 'resolved' ? undefined : alertImpactSince(alert);
    return incidents.recordAlertOn(incidentId, {
      id: `${alert.id}/${event}${event === 'worse' ? `/${alert.updatedAt}` : ''}`,
      at:
        event === 'fired'
          ? (alert.firedAt ?? alert.since)
          : event === 'resolved'
            ? (alert.resolvedAt ?? alert.updatedAt)
            : alert.updatedAt,
      text: `alert ${event === 'fired' ? 'fired' : event === 'worse' ? 'got worse' : 'resolved'} (${alert.severity}): ${alert.summary}`,
      instance: alert.instance,
      ...(alert.appSet ? { appSet: alert.appSet } : {}),
      ...(alert.app ? { app: alert.app } : {}),
      ...(impactSince ? { impactSince } : {}),
    });
  };
  return {
    async openCovering(alert: AlertRecord): Promise<CoveringIncident | null> {
      const apps = alert.apps.length ? alert.apps : alert.app ? [alert.app] : [];
      const covering = apps.length
        ? (await Promise.all(apps.map((app) => incidents.openCoveringScope({ instance: alert.instance, app })))).flat()
        : await incidents.openCoveringScope(
            alert.appSet ? { appSet: alert.appSet, instance: alert.instance } : { instance: alert.instance },
          );
      const incident = covering[0];
      if (!incident) return null;
      if (incident.header)
        return { id: incident.id, channel: incident.channel ?? incident.header.channel, threadTs: incident.header.ts };
      await record(incident.id, alert, 'fired');
      return null;
    },
    recordAlert: async (incidentId, alert, event) => {
      await record(incidentId, alert, event);
    },
  };
}
