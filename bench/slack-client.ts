/**
 * Slack's side of bench/slack-ack.ts and slack-bot.ts, in its own process so that neither the firing clients nor the
 * response_url receiver wait on the bot's event loop: the fake Slack Web API (test/support/fake-slack.ts)
 * plus the signed slash-command requests (test/support/slack-request.ts).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startFakeSlack, type FakeSlack } from '../test/support/fake-slack.js';
import { slackSignature, slashCommandBody, type SlashCommandFields } from '../test/support/slack-request.js';

export type SlackClientRequest =
  | { kind: 'start' }
  | {
      kind: 'burst';
      url: string;
      secret: string;
      /** The command of every request, or of each in turn (request i asks `text[i % text.length]`). */
      text: string | readonly string[];
      n: number;
      round: string;
      timeoutMs: number;
      /** false: only the acks are measured (a server that answers nothing, such as a floor). @defaultValue true */
      answers?: boolean;
      /** true: the first answer's whole body comes back too (firstAnswer.body), for checking what it says. */
      body?: boolean;
      /** Who fires the crowd (see `Firer`). @defaultValue 'node' */
      firer?: Firer;
      /**
       * node only: the requests are fired evenly over this many ms instead of at once, as people who read the same
       * alert type at their own speed; each answer is timed from its own request. @defaultValue 0
       */
      spreadMs?: number;
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

/**
 * What fires a crowd: node:http in this process, or curl (`--parallel`, a connection each), a C client whose own cost
 * per request is a fraction of node's. On a 2-CPU machine the load generator's CPU comes out of what the bot under
 * test gets, and a node client that is still sending the crowd's last requests reads the first answers late: curl
 * measures each request's ack with less of itself in it, as Slack's senders, on machines of their own, do.
 */
export type Firer = 'node' | 'curl';

/** curl with `--parallel-immediate` (7.68): every connection of a crowd opened at once. */
export function curlCanFire(): boolean {
  const out = spawnSync('curl', ['--version'], { encoding: 'utf8' });
  const [major, minor] = (/^curl (\d+)\.(\d+)/.exec(out.stdout ?? '') ?? []).slice(1).map(Number);
  return out.status === 0 && (major > 7 || (major === 7 && minor >= 68));
}

/** curl when this machine has one that can fire a crowd at once, else node:http. */
export function defaultFirer(): Firer {
  return curlCanFire() ? 'curl' : 'node';
}

/** Says who fires the crowds, for a bench's header. */
export function firerLine(firer: Firer): string {
  return `crowds fired by ${firer === 'curl' ? 'curl --parallel' : 'node:http'}, a connection each`;
}

let fake: FakeSlack | undefined;
let curlDir: string | undefined;
const run = promisify(execFile);

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

/** A curl config that sends the crowd's signed slash commands, each over a connection of its own; its path. */
function curlCrowd(url: string, secret: string, crowd: SlashCommandFields[]): string {
  curlDir ??= mkdtempSync(path.join(tmpdir(), 'rollcall-bench-curl-'));
  const timestamp = Math.floor(Date.now() / 1000);
  const config = crowd.flatMap((fields, i) => {
    const body = slashCommandBody(fields);
    const file = path.join(curlDir!, `body-${i}`);
    writeFileSync(file, body);
    return [
      ...(i ? ['next'] : []),
      `url = "${url}"`,
      'header = "content-type: application/x-www-form-urlencoded"',
      `header = "x-slack-request-timestamp: ${timestamp}"`,
      `header = "x-slack-signature: ${slackSignature(secret, timestamp, body)}"`,
      `data-binary = "@${file}"`,
      'output = "/dev/null"',
      'write-out = "%{http_code} %{time_total}\\n"',
    ];
  });
  const configFile = path.join(curlDir, 'crowd.conf');
  writeFileSync(configFile, config.join('\n') + '\n');
  return configFile;
}

/**
 * Fires a crowd with curl, all at once: each request's HTTP status and `time_total` (from the start of its transfer,
 * connect included, to the end of the response), in the order they finished.
 */
async function fireWithCurl(configFile: string, n: number): Promise<{ status: number; ms: number }[]> {
  const flags = ['-sS', '--parallel', '--parallel-immediate', '--parallel-max', String(n), '-K', configFile];
  const { stdout } = await run('curl', flags);
  const lines = stdout.trim().split('\n');
  if (lines.length !== n) throw new Error(`curl reported ${lines.length} of ${n} requests`);
  return lines.map((line) => {
    const [status, seconds] = line.split(' ');
    return { status: Number(status), ms: Number(seconds) * 1000 };
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
    const texts = typeof req.text === 'string' ? [req.text] : req.text;
    const crowd = Array.from({ length: req.n }, (_, i) => ({
      text: texts[i % texts.length],
      user_id: `U${String(i).padStart(4, '0')}`,
      response_url: f.responseUrl(`${req.round}-${i}`),
    }));
    const configFile = req.firer === 'curl' ? curlCrowd(req.url, req.secret, crowd) : undefined;
    const fired = Date.now();
    const spread = configFile ? 0 : (req.spreadMs ?? 0);
    const firedAt = crowd.map((_, i) => fired + (req.n > 1 ? (i * spread) / (req.n - 1) : 0));
    const results = configFile
      ? await fireWithCurl(configFile, req.n)
      : await Promise.all(
          crowd.map(async (fields, i) => {
            if (spread) await new Promise((r) => setTimeout(r, firedAt[i] - Date.now()));
            firedAt[i] = Date.now();
            return fireSlashCommand(req.url, req.secret, fields);
          }),
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
      answerMs: Array.from({ length: req.n }, (_, i) => (answerAt(i) ?? NaN) - firedAt[i]).filter((ms) => !isNaN(ms)),
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
  if (curlDir) rmSync(curlDir, { recursive: true, force: true });
  void (fake?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
});
