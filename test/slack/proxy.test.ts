import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/infra/config/schema.js';
import { createSlackWebClient } from '../../src/surfaces/slack/client.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import {
  actAsForwardProxy,
  PROXY_VARIABLES,
  restoreProxyEnvAfterEach,
  type ForwardProxy,
} from '../support/forward-proxy.js';

restoreProxyEnvAfterEach();

// Node's fetch ignores HTTPS_PROXY; behind an egress proxy the bot and the workers must still reach Slack.
describe('Slack Web API calls through the proxy the environment names', () => {
  let fake: FakeSlack;
  let proxy: http.Server;
  let proxyUrl: string;
  let forward: ForwardProxy;
  let proxied: ForwardProxy['proxied'];

  beforeAll(async () => {
    fake = await startFakeSlack();
    proxy = http.createServer();
    forward = actAsForwardProxy(proxy);
    proxied = forward.proxied;
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://ops:s%3Acret@127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    forward.destroyTunnels();
    proxy.closeAllConnections();
    await new Promise((r) => proxy.close(r));
    await fake.stop();
  });

  const slack = () =>
    configSchema.parse({
      instances: [{ name: 'prod', url: 'https://argocd.example', token: 't' }],
      slack: { mode: 'http', botToken: 'xoxb-test', signingSecret: 's', apiUrl: fake.apiUrl },
    }).slack!;
  const slackHost = () => new URL(fake.apiUrl).host;

  it('posts through HTTPS_PROXY / HTTP_PROXY with the credentials of its URL', async () => {
    process.env.HTTPS_PROXY = proxyUrl;
    process.env.HTTP_PROXY = proxyUrl;
    proxied.length = 0;
    const before = fake.callsTo('chat.postMessage').length;
    const answer = await createSlackWebClient(slack()).chat.postMessage({
      channel: 'C0OPS',
      text: 'through the proxy',
    });
    expect(answer.ok).toBe(true);
    expect(
      fake
        .callsTo('chat.postMessage')
        .slice(before)
        .map((c) => c.args.text),
    ).toEqual(['through the proxy']);
    expect(proxied.length).toBeGreaterThan(0);
    expect(proxied.every((p) => p.auth === `Basic ${Buffer.from('ops:s:cret').toString('base64')}`)).toBe(true);
    expect(proxied.map((p) => (p.method === 'CONNECT' ? p.url : new URL(p.url!).host))).toContain(slackHost());
    // Files (an incident's report and chart) go the same way: the upload URL, then the multipart POST to it.
    await createSlackWebClient(slack()).filesUploadV2({
      channel_id: 'C0OPS',
      file_uploads: [{ file: Buffer.from('# INC-1'), filename: 'INC-1.md' }],
    });
    const upload = fake.uploads.find((u) => u.body.includes(Buffer.from('# INC-1')));
    expect(upload?.contentType).toMatch(/^multipart\/form-data; boundary=/);
  });

  it('goes direct where NO_PROXY says, and with no proxy variable at all', async () => {
    process.env.HTTPS_PROXY = proxyUrl;
    process.env.HTTP_PROXY = proxyUrl;
    process.env.NO_PROXY = '127.0.0.1';
    proxied.length = 0;
    expect((await createSlackWebClient(slack()).chat.postMessage({ channel: 'C0OPS', text: 'exempt' })).ok).toBe(true);
    for (const v of PROXY_VARIABLES) delete process.env[v];
    expect((await createSlackWebClient(slack()).chat.postMessage({ channel: 'C0OPS', text: 'direct' })).ok).toBe(true);
    expect(proxied).toEqual([]);
    expect(
      fake
        .callsTo('chat.postMessage')
        .slice(-2)
        .map((c) => c.args.text),
    ).toEqual(['exempt', 'direct']);
  });
});
