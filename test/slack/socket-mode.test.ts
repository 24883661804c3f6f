import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import '../../src/commands/index.js';
import type { Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { startSlack, type SlackHandle } from '../../src/surfaces/slack/app.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import { smallFleetObjects } from './fixture.js';
import { allText } from './limits.js';

// Socket Mode offline: the fake answers apps.connections.open with a local ws server that plays Slack's side.
describe('Socket Mode', () => {
  let fake: FakeSlack;
  let wss: WebSocketServer;
  let slack: SlackHandle;
  let socket: WebSocket | undefined;
  const received: any[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack();
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    fake.socketUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/link`;
    wss.on('connection', (ws) => {
      socket = ws;
      ws.on('message', (data) => received.push(JSON.parse(String(data))));
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: 1,
          debug_info: { host: 'fake' },
          connection_info: { app_id: 'A0ROLLCALL' },
        }),
      );
    });
    const config = configSchema.parse({
      instances: [{ name: 'prod', url: 'https://prod.argocd.example', token: 't' }],
      slack: { mode: 'socket', botToken: 'xoxb-test', appToken: 'xapp-test', apiUrl: fake.apiUrl },
    });
    const services: Services = { config, fleet: StaticFleet.fromObjects(smallFleetObjects()), argocd: new Map() };
    slack = await startSlack(services, { logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await slack?.stop();
    for (const c of wss?.clients ?? []) c.terminate();
    await new Promise((r) => wss?.close(r));
    await fake?.stop();
  });

  it('connects with the app token, acks a slash command on the socket and answers on response_url', async () => {
    const open = fake.callsTo('apps.connections.open');
    expect(open).toHaveLength(1);
    expect(open[0].headers.authorization).toBe('Bearer xapp-test');
    expect(slack.port).toBeUndefined();
    await expect.poll(() => socket !== undefined).toBe(true);
    socket!.send(
      JSON.stringify({
        envelope_id: 'env-1',
        type: 'slash_commands',
        accepts_response_payload: true,
        payload: {
          command: '/argo',
          text: 'status',
          user_id: 'U0ALICE',
          channel_id: 'C0OPS',
          channel_name: 'ops',
          team_id: 'T0TEAM',
          response_url: fake.responseUrl('sock'),
          trigger_id: 't1',
        },
      }),
    );
    await expect.poll(() => received.find((m) => m.envelope_id === 'env-1')).toBeTruthy();
    await expect.poll(() => fake.responsesTo('sock').length).toBe(1);
    expect(allText(fake.responsesTo('sock')[0].body.blocks)).toContain('auth-service-prod-us1');
  });
});
