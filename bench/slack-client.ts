/**
 * Slack's side of bench/slack-ack.ts and slack-bot.ts, in its own process so that neither the firing clients nor the
 * response_url receiver wait on the bot's event loop: the fake Slack Web API (test/support/fake-slack.ts)
 * plus the signed slash-command requests (test/support/slack-request.ts).
 */
import { request } from 'node:http';
import { startFakeSlack, type FakeSlack } from '../test/support/fake-slack.js';
import { slackSignature, slashCommandBody, type SlashCommandFields } from '../test/support/slack-request.js';

export type SlackClientRequest =
  | { kind: 'start' }
  | {
      kind: 'burst';
      url: string;
      secret: string;
      text: string;
      n: number;
      round: string;
      timeoutMs: number;
      /** false: only the acks are measured (a server that answers nothing, such as a floor). @defaultValue true */
      answers?: boolean;
      /** true: the first answer's whole body comes back too (firstAnswer.body), for checking what it says. */
      body?: boolean;
    }
  | { kind: 'calls' };

export interface BurstResult {
  statuses: Record<number, number>;
  ackMs: number[];
  answerMs: number[];
  missing: number;
  /** Date.now() when the 50 requests were fired. */
  fired: number;
  firstAnswer?: { text?: string; blocks?: number; body?: unknown };
}

let fake: FakeSlack | undefined;

/**
 * One signed slash command over a connection of its own, as the commands of many people reach a bot through Slack's
 * many senders. node:http rather than fetch: Slack's senders do not run on the bot's machine, and on a 2-CPU machine
 * every millisecond the load generator spends is one the bot under test does not get; fetch (undici) costs its
 * caller several times what node:http does per request.
 */
function fireSlashCommand(
  url: string,
  secret: string,
  fields: SlashCommandFields,
): Promise<{ status: number; ms: number }> {
  const body = slashCommandBody(fields);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
          'x-slack-request-timestamp': String(timestamp),
          'x-slack-signature': slackSignature(secret, timestamp, body),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

process.on('message', (raw: unknown) => {
  const req = raw as SlackClientRequest;
  void (async () => {
    if (req.kind === 'start') {
      fake = await startFakeSlack();
      process.send!({ apiUrl: fake.apiUrl, url: fake.url });
      return;
    }
    if (req.kind === 'calls') {
      process.send!({ methods: fake!.calls.map((c) => c.method) });
      return;
    }
    const f = fake!;
    const fired = Date.now();
    const results = await Promise.all(
      Array.from({ length: req.n }, (_, i) =>
        fireSlashCommand(req.url, req.secret, {
          text: req.text,
          user_id: `U${String(i).padStart(4, '0')}`,
          response_url: f.responseUrl(`${req.round}-${i}`),
        }),
      ),
    );
    const statuses: Record<number, number> = {};
    for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    const answerAt = (i: number) => f.responsesTo(`${req.round}-${i}`)[0]?.at;
    const deadline = req.answers === false ? 0 : Date.now() + req.timeoutMs;
    while (Array.from({ length: req.n }, (_, i) => answerAt(i)).some((a) => a === undefined) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    const answers = Array.from({ length: req.n }, (_, i) => answerAt(i)).filter((a): a is number => a !== undefined);
    const first = f.responsesTo(`${req.round}-0`)[0]?.body as { text?: string; blocks?: unknown[] } | undefined;
    const out: BurstResult = {
      statuses,
      ackMs: results.map((r) => r.ms),
      answerMs: answers.map((a) => a - fired),
      missing: req.answers === false ? 0 : req.n - answers.length,
      fired,
      firstAnswer: first
        ? { text: first.text?.slice(0, 120), blocks: first.blocks?.length, ...(req.body ? { body: first } : {}) }
        : undefined,
    };
    process.send!(out);
  })().catch((error: unknown) => {
    process.send!({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});

process.once('disconnect', () => {
  void (fake?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
});
