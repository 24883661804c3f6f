import type {
  ApplicationSet,
  ApplicationSetCondition,
  ApplicationSetStatus,
  HealthStatusCode,
} from '../infra/argocd/types.js';
import { SIM_ANNOTATIONS } from './annotations.js';
import { rfc3339 } from './clock.js';

/**
 * v3.4+ appset health (ApplicationSetStatus.CalculateHealth, applicationset_types.go): ErrorOccurred=True
 * → Degraded with its message; RolloutProgressing=True → Progressing with its message;
 * ResourcesUpToDate=True → Healthy with its message; otherwise Unknown, with Argo CD's own wording.
 */
export function appSetHealth(status: ApplicationSetStatus): { status: HealthStatusCode; message: string } {
  const conditions = status.conditions ?? [];
  if (!conditions.length) return { status: 'Unknown', message: 'No status conditions found for ApplicationSet' };
  const isTrue = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const error = isTrue('ErrorOccurred');
  if (error) return { status: 'Degraded', message: error.message ?? '' };
  const rollout = isTrue('RolloutProgressing');
  if (rollout) return { status: 'Progressing', message: rollout.message ?? '' };
  const upToDate = isTrue('ResourcesUpToDate');
  if (upToDate) return { status: 'Healthy', message: upToDate.message ?? '' };
  return { status: 'Unknown', message: 'Waiting for health status to be determined' };
}

/** A generated Application that failed validation, as a fixture declares it (SIM_ANNOTATIONS.generatedInvalid). */
export interface InvalidGeneratedApp {
  name: string;
  /** Its generated labels (what the steps match). */
  labels?: Record<string, string>;
  /** The validation error, in validateGeneratedApplications' words. */
  error: string;
}

export function invalidGenerated(appSet: ApplicationSet): InvalidGeneratedApp[] {
  const raw = appSet.metadata.annotations?.[SIM_ANNOTATIONS.generatedInvalid];
  if (!raw) return [];
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed
      .filter((e): e is InvalidGeneratedApp => !!e && typeof e.name === 'string' && typeof e.error === 'string')
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

const UP_TO_DATE_MESSAGE = 'All applications have been generated successfully';

/**
 * The conditions Reconcile writes about validation: with invalid apps, ErrorOccurred=True reason
 * ApplicationValidationError whose message is the last app's error (by name) plus "(and N more)", and
 * ResourcesUpToDate=False reason ErrorOccurred; once none is invalid again, ResourcesUpToDate=True and
 * ErrorOccurred=False (setApplicationSetStatusCondition's dependent condition). Untouched otherwise, so
 * a fixture's conditions are served as captured.
 */
export function validationConditions(
  conditions: ApplicationSetCondition[],
  invalid: InvalidGeneratedApp[],
  now: Date,
): ApplicationSetCondition[] {
  const stamp = rfc3339(now);
  const set = (list: ApplicationSetCondition[], c: ApplicationSetCondition) => {
    const i = list.findIndex((x) => x.type === c.type);
    const same = i >= 0 && list[i].status === c.status && list[i].reason === c.reason && list[i].message === c.message;
    if (same) return list;
    const next = { ...c, lastTransitionTime: stamp };
    return i >= 0 ? list.map((x, j) => (j === i ? next : x)) : [...list, next];
  };
  let out = conditions;
  if (invalid.length) {
    const last = invalid[invalid.length - 1].error;
    const message = invalid.length > 1 ? `${last} (and ${invalid.length - 1} more)` : last;
    out = set(out, { type: 'ErrorOccurred', status: 'True', reason: 'ApplicationValidationError', message });
    out = set(out, { type: 'ResourcesUpToDate', status: 'False', reason: 'ErrorOccurred', message });
    out = set(out, {
      type: 'ParametersGenerated',
      status: 'True',
      reason: 'ParametersGenerated',
      message: 'Successfully generated parameters for all Applications',
    });
  } else if (
    out.some((c) => c.type === 'ErrorOccurred' && c.status === 'True' && c.reason === 'ApplicationValidationError')
  ) {
    out = set(out, {
      type: 'ResourcesUpToDate',
      status: 'True',
      reason: 'ApplicationSetUpToDate',
      message: UP_TO_DATE_MESSAGE,
    });
    out = set(out, {
      type: 'ErrorOccurred',
      status: 'False',
      reason: 'ApplicationSetUpToDate',
      message: UP_TO_DATE_MESSAGE,
    });
  }
  return out;
}
