import { X509Certificate } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/sim/clock.js';
import { SimKube } from '../../src/sim/kube/index.js';
import { KEY_LABEL } from '../../src/sim/kube/cluster.js';
import { KEY_AGES_MS, sealedSecretsMigration } from '../../src/sim/kube/scenario.js';

const DAY = 86_400_000;
let kube: SimKube | undefined;
afterEach(() => kube?.stop());

/** The scenario's clusters on a simulated clock that starts `offsetDays` from today. */
function boot(offsetDays: number) {
  const clock = new ManualClock(Date.now() + offsetDays * DAY);
  const fixture = sealedSecretsMigration(clock.now());
  for (const k of fixture.kube!) if (k.sealedSecretsController) k.sealedSecretsController.startupMs = 0;
  kube = new SimKube(fixture.kube, () => clock.now());
  return { clock, cluster: (name: string) => kube!.clusters.get(name)! };
}

const keys = (c: ReturnType<ReturnType<typeof boot>['cluster']>) =>
  c
    .list('Secret', 'kube-system', `${KEY_LABEL}=active`)
    .map((s) => new X509Certificate(Buffer.from(s.data['tls.crt'], 'base64').toString()).validFrom)
    .map((d) => Date.parse(d))
    .sort((a, b) => a - b);

function restartController(c: ReturnType<ReturnType<typeof boot>['cluster']>) {
  const [pod] = c.controllerPods();
  const res = c.handle(
    'DELETE',
    `/api/v1/namespaces/kube-system/pods/${pod.metadata.name}`,
    new URLSearchParams(),
    undefined,
  );
  expect(res.status).toBe(200);
}

describe('sealed-secrets-migration is the same scenario on any date', () => {
  // Today, a year ahead, and ten years ahead: the keys' dates follow the simulated clock.
  for (const offsetDays of [0, 400, 3650]) {
    it(`starts prod-old with its three monthly keys and prod-new with one fresh key (${offsetDays} days from today)`, () => {
      const { clock, cluster } = boot(offsetDays);
      const start = clock.now().getTime();
      const second = (ms: number) => Math.floor(ms / 1000) * 1000;
      expect(keys(cluster('prod-old'))).toEqual(
        [KEY_AGES_MS.old1, KEY_AGES_MS.old2, KEY_AGES_MS.old3].map((age) => second(start - age)),
      );
      expect(keys(cluster('prod-new'))).toEqual([second(start - KEY_AGES_MS.new1)]);
    });
  }

  it('renews prod-old once its newest key is over 30 days old by the simulated clock, dated by that clock', () => {
    const { clock, cluster } = boot(400);
    const prodOld = cluster('prod-old');
    restartController(prodOld);
    expect(keys(prodOld)).toHaveLength(3);

    // The newest key is 27 days old: four more simulated days make it stale, and a restart renews it.
    clock.advance(4 * DAY);
    restartController(prodOld);
    const after = keys(prodOld);
    expect(after).toHaveLength(4);
    expect(after[3]).toBe(Math.floor(clock.now().getTime() / 1000) * 1000);

    // The fresh key is not stale: another restart adds nothing.
    restartController(prodOld);
    expect(keys(prodOld)).toHaveLength(4);
  });
});
