/**
 * Slack's side of bench/slack-ack.ts, in its own process so that neither the firing clients nor the
 * response_url receiver wait on the bot's event loop: the fake Slack Web API (test/support/fake-slack.ts)
 * plus the signed slash-command requests (test/support/slack-request.ts).
 */
import { startFakeSlack, type FakeSlack } from '../test/support/fake-slack.js';
import { postSlashCommand } from '../test/support/slack-request.js';

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
        postSlashCommand(req.url, req.secret, {
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
