import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/config/schema.js';
import { setDisplayTimeZone } from '../../src/core/format.js';
import { PAGE_SIZE } from '../../src/core/reply.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { ChangeLog } from '../../src/incidents/change-log.js';
import { ChangeRecorder } from '../../src/incidents/recorder.js';
import { closeRedis, createRedis } from '../../src/jobs/redis.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { renderText } from '../../src/views/text.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const redis = createRedis(process.env.REDIS_URL!);
const prefix = testPrefix();
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(redis);
});
afterEach(() => setDisplayTimeZone('UTC'));

const fleet = StaticFleet.fromFixture(seedOutageFixture(new Date()));
const changes = new ChangeLog(redis, prefix);
const services: Services = {
  config: configSchema.parse({ instances: [{ name: 'prod', url: 'https://prod.argocd.example', token: 't' }], redis: { prefix } }),
  fleet,
  argocd: new Map(),
  changes,
};
const ctx: CommandContext = { services, user: 'U_OP', surface: 'terminal', channel: 'terminal' };

describe('changes', () => {
  it('lists every group it counts, reachable page by page, with times of day in the display time zone', async () => {
    const recorder = new ChangeRecorder(fleet, changes);
    await recorder.start();
    await recorder.stop();
    setDisplayTimeZone('Asia/Kolkata');

    const reply = await dispatch('changes since=2h', ctx);
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const groups = reply.data.groups as { to: string; text: string }[];
    // The fixture's history has more groups than one page holds: the header's count and the pager must agree.
    expect(groups.length).toBeGreaterThan(PAGE_SIZE.terminal * 2);
    const list = reply.blocks.find((b) => b.kind === 'list');
    expect(list?.kind === 'list' && list.items.length).toBe(groups.length);

    const pages = Math.ceil(groups.length / PAGE_SIZE.terminal);
    const last = renderText(reply, { page: pages });
    expect(last).toContain(`of ${groups.length}`);
    expect(last).toContain(groups[groups.length - 1].text.replace(/`/g, '').slice(0, 30));

    const first = renderText(reply);
    expect(first).toContain('Times Asia/Kolkata');
    const newest = new Date(groups[0].to);
    const kolkata = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Kolkata', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(newest);
    expect(kolkata).not.toBe(groups[0].to.slice(11, 16)); // UTC+5:30 never shows the UTC minute
    expect(first).toContain(kolkata);
  });
});
