/**
 * progressive-syncs-disabled: an appset with `strategy.type: RollingSync` and generated apps, but no
 * status.applicationStatus at all. The ApplicationSet controller runs RollingSync only with
 * --enable-progressive-syncs (off by default; cmd/argocd-applicationset-controller/commands/applicationset_controller.go
 * at v3.5.1), and with it off its Reconcile clears every applicationStatus entry and treats the appset as
 * AllAtOnce (applicationset/controllers/applicationset_controller.go, "Progressive Sync is disabled").
 * An empty applicationStatus beside generated apps is therefore the controller saying the flag is off.
 */
import { plural } from '../../core/format.js';
import { appsWithoutEntries, type AddFinding, type AppSetContext } from './appset-context.js';
import { nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const names = appsWithoutEntries(ctx);
  if (names.length === 0) return;
  add({
    rule: 'progressive-syncs-disabled',
    severity: 'critical',
    message:
      `ApplicationSet \`${ctx.name}\` uses RollingSync and has ${plural(names.length, 'generated app')} (${nameList(names)}), ` +
      'but status.applicationStatus is empty: the ApplicationSet controller is not running progressive syncs.',
    why:
      'RollingSync runs only when the ApplicationSet controller has progressive syncs enabled (--enable-progressive-syncs; off by default). ' +
      "With it off the appset behaves as AllAtOnce: generated apps keep the template's sync policy, so with automated set every app syncs a change at once, in no order; " +
      'and since v3.3 the controller deletes any applicationStatus entries. ' +
      'The name --enable-progressive-rollouts found in older posts was used only by the v2.6.0 release candidates and does nothing on released versions.',
    fix:
      'Enable it: set `applicationsetcontroller.enable.progressive.syncs: "true"` in the argocd-cmd-params-cm ConfigMap and restart the argocd-applicationset-controller Deployment ' +
      '(equivalently the flag --enable-progressive-syncs or env ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_PROGRESSIVE_SYNCS=true). ' +
      'If the appset was created moments ago, wait one reconcile and check again.',
    apps: names,
  });
}

export const progressiveSyncsDisabledRule: RuleViews = { appSet: { check } };
