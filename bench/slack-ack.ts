/**
 * Issue 3: 50 concurrent `/argo` slash commands through Bolt's real HTTP receiver (signed requests,
 * src/surfaces/slack/app.ts startSlack) on the 10,000-app mirror. Measures the time to the HTTP 200 ack and the
 * time until each answer arrives at its response_url. Slack's side (the 50 clients and the fake Web API)
 * runs in another process (bench/slack-client.ts), so only the bot's own work is on the bot's event loop.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { slackSchema, type RollcallConfig } from '../src/infra/config/schema.js';
import { startSlack } from '../src/surfaces/slack/app.js';
import {
  BENCH_DIR,
  buildMirror,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  simConfig,
  startSimChild,
  stats,
  table,
  type BotFleet,
} from './lib.js';
import { defaultFirer, firerLine, type BurstResult, type SlackClientRequest } from './slack-client.js';

const CONCURRENT = 50;
const SECRET = 'bench-signing-secret-0123456789abcdef';
const ACK_TARGET_MS = 1000;

export interface SlackAckResult {
  command: string;
  ack: ReturnType<typeof stats>;
  answer: ReturnType<typeof stats>;
  statuses: Record<number, number>;
  /** Bot side: request seen by the bot's HTTP server → 200 written. */
  botAck: ReturnType<typeof stats>;
  /** Fired by the client → the bot's HTTP server sees the request (both clocks are this machine's). */
  seen: ReturnType<typeof stats>;
  botCpuMs: number;
  wallMs: number;
  loopDelayMaxMs: number;
}

function ask<T>(child: ChildProcess, req: SlackClientRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: unknown) =>
      (m as { error?: string }).error ? reject(new Error((m as { error: string }).error)) : resolve(m as T),
    );
    child.send(req);
  });
}

export async function runSlackAckBench(shared?: BotFleet): Promise<SlackAckResult[]> {
  header(
    `${CONCURRENT} concurrent /argo slash commands through Bolt's HTTP receiver, 10,000-app mirror (ack target well under ${ACK_TARGET_MS} ms)`,
  );
  console.log(`  ${machineLine()}`);
  const firer = defaultFirer();
  console.log(`  ${firerLine(firer)}`);
  const sim = shared ? undefined : await startSimChild({ kind: 'fleet', apps: 10_000, clusters: 200 });
  const client = fork(path.join(BENCH_DIR, 'slack-client.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { apiUrl } = await ask<{ apiUrl: string }>(client, { kind: 'start' });
    const bot = shared ?? (await buildMirror(simConfig(sim!)));
    const config: RollcallConfig = {
      ...bot.config,
      slack: slackSchema.parse({ mode: 'http', botToken: 'xoxb-bench-token', signingSecret: SECRET, port: 0, apiUrl }),
    };
    const services = { config, fleet: bot.mirror, argocd: bot.argocd, now: () => new Date() };
    const slack = await startSlack(services, { logger: pino({ level: 'silent' }) });
    const url = `http://127.0.0.1:${slack.port}/slack/events`;
    // Bolt's HTTPReceiver keeps its node:http server; timing there separates the bot's own ack time from
    // the client's scheduling on a loaded machine.
    const server = (slack.app as unknown as { receiver: { server?: Server } }).receiver.server;
    let botAcks: number[] = [];
    let seenAt: number[] = [];
    server?.prependListener('request', (_req, res) => {
      const seen = performance.now();
      seenAt.push(Date.now());
      res.once('finish', () => botAcks.push(performance.now() - seen));
    });
    try {
      const burst = async (text: string, round: string, n = CONCURRENT): Promise<SlackAckResult> => {
        botAcks = [];
        seenAt = [];
        const loop = monitorEventLoopDelay({ resolution: 10 });
        loop.enable();
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const r = await ask<BurstResult>(client, {
          kind: 'burst',
          url,
          secret: SECRET,
          text,
          n,
          round,
          timeoutMs: 60_000,
          firer,
        });
        const wallMs = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        loop.disable();
        if (r.missing) throw new Error(`${r.missing}/${n} answers to "${text}" never reached response_url`);
        if (!r.firstAnswer?.blocks) throw new Error(`the answer to "${text}" has no blocks`);
        return {
          command: text,
          ack: stats(r.ackMs),
          answer: stats(r.answerMs),
          statuses: r.statuses,
          botAck: stats(botAcks),
          seen: stats(seenAt.map((at) => at - r.fired)),
          botCpuMs: (cpu.user + cpu.system) / 1000,
          wallMs,
          loopDelayMaxMs: loop.max / 1e6,
        };
      };
      // Warm the receiver and the command path the way a running bot is warm.
      for (let i = 0; i < 3; i++) await burst('status', `warm${i}`, 1);
      // `help` touches no fleet data: its row is the cost of the HTTP, signature and Bolt path alone.
      const results = [
        await burst('status', 'status'),
        await burst('status auth-*', 'glob'),
        await burst('help', 'help'),
      ];
      table([
        [
          `command ×${CONCURRENT} at once`,
          'HTTP',
          'ack p50 ms',
          'ack p95 ms',
          'ack max ms',
          'answer p50 ms',
          'answer p95 ms',
          'answer max ms',
          'fire→bot sees p50/max',
          'bot-side ack p95/max',
          'bot CPU / wall ms',
          'loop stall max',
          `ack max < ${ACK_TARGET_MS}`,
        ],
        ...results.map((r) => [
          `/argo ${r.command}`,
          Object.entries(r.statuses)
            .map(([s, n]) => `${s}×${n}`)
            .join(' '),
          ms(r.ack.p50),
          ms(r.ack.p95),
          ms(r.ack.max),
          ms(r.answer.p50),
          ms(r.answer.p95),
          ms(r.answer.max),
          `${ms(r.seen.p50)}/${ms(r.seen.max)}`,
          `${ms(r.botAck.p95)}/${ms(r.botAck.max)}`,
          `${ms(r.botCpuMs)}/${ms(r.wallMs)}`,
          ms(r.loopDelayMaxMs),
          r.ack.max < ACK_TARGET_MS ? 'yes' : 'NO',
        ]),
      ]);
      console.log(
        `  (ack = signed POST → HTTP 200; answer = fire → response_url POST received; bot-side ack = request seen by the bot's HTTP server → 200 written; ${loadLine()})`,
      );
      return results;
    } finally {
      await slack.stop();
      if (!shared) await bot.mirror.stop();
    }
  } finally {
    client.disconnect();
    await sim?.stop();
  }
}

if (isMain(import.meta.url)) {
  runSlackAckBench().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
