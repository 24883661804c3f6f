import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Slack Web API on node:http that records every call, as Slack would see it: the Web API posts
 * form-encoded args with nested JSON (`blocks`, `view`) as strings, and respond() POSTs JSON to response_url.
 * Point Bolt at it with `slack.apiUrl = fake.apiUrl` and put `fake.responseUrl()` in payloads.
 */
export interface FakeSlackCall {
  method: string;
  /** The form (or JSON) args, with `blocks`, `view`, `attachments`, `metadata` JSON-decoded. */
  args: Record<string, any>;
  headers: IncomingHttpHeaders;
  at: number;
  /** Answered with a scripted 429. */
  rateLimited: boolean;
}

export interface FakeResponseCall {
  id: string;
  body: Record<string, any>;
  headers: IncomingHttpHeaders;
  at: number;
}

/** A file body POSTed to an upload_url from files.getUploadURLExternal (step 2 of files.uploadV2). */
export interface FakeUpload {
  fileId: string;
  contentType?: string;
  body: Buffer;
}

export interface FakeSlack {
  url: string;
  /** Web API base for `clientOptions.slackApiUrl` (ends with /api/). */
  apiUrl: string;
  port: number;
  calls: FakeSlackCall[];
  responses: FakeResponseCall[];
  uploads: FakeUpload[];
  /** Calls to one method that were answered (not rate-limited). */
  callsTo(method: string): FakeSlackCall[];
  responsesTo(id: string): FakeResponseCall[];
  /** A fresh response_url on this server. */
  responseUrl(id?: string): string;
  /** Answer the next `times` calls to `method` with 429 and `Retry-After: retryAfterSeconds`. */
  rateLimit(method: string, times: number, retryAfterSeconds: number): void;
  /** What apps.connections.open answers (Socket Mode): the WebSocket URL of a test server. */
  socketUrl?: string;
  /**
   * Answer calls to `method` with HTTP 200 `{ok:false, error, ...extra}` until cleared (error undefined), as
   * Slack does: `extra` carries what Slack adds to some errors (`needed`/`provided` on missing_scope).
   */
  failWith(method: string, error: string | undefined, extra?: Record<string, unknown>): void;
  reset(): void;
  stop(): Promise<void>;
}

const JSON_ARGS = ['blocks', 'view', 'attachments', 'metadata', 'files'];

export async function startFakeSlack(opts: { botUserId?: string; teamId?: string } = {}): Promise<FakeSlack> {
  const botUserId = opts.botUserId ?? 'U0BOT';
  const teamId = opts.teamId ?? 'T0TEAM';
  const calls: FakeSlackCall[] = [];
  const responses: FakeResponseCall[] = [];
  const uploads: FakeUpload[] = [];
  const pendingFiles = new Map<string, { filename: string; length: number }>();
  let fileCounter = 0;
  let channelCounter = 0;
  const limits = new Map<string, { times: number; retryAfter: number }>();
  const failures = new Map<string, { error: string; extra?: Record<string, unknown> }>();
  let tsCounter = 0;
  let viewCounter = 0;
  let responseCounter = 0;

  // eslint-disable-next-line prefer-const -- assigned once the server is listening; answer() runs later
  let fake: FakeSlack;
  const nextTs = () => `1700000000.${String(++tsCounter).padStart(6, '0')}`;

  const answer = (method: string, args: Record<string, any>): Record<string, unknown> => {
    const failure = failures.get(method);
    if (failure) return { ok: false, error: failure.error, ...failure.extra };
    switch (method) {
      case 'auth.test':
        return {
          ok: true,
          url: 'https://fake.slack.com/',
          team: 'fake',
          user: 'rollcall',
          team_id: teamId,
          user_id: botUserId,
          bot_id: 'B0BOT',
        };
      case 'chat.postMessage':
        return { ok: true, channel: args.channel, ts: nextTs(), message: { text: args.text, blocks: args.blocks } };
      case 'chat.update':
        return { ok: true, channel: args.channel, ts: args.ts, text: args.text };
      case 'chat.postEphemeral':
        return { ok: true, message_ts: nextTs() };
      case 'conversations.create':
        // Slack: lower case, at most 80 characters, no spaces or periods; a taken name is name_taken.
        if (!/^[a-z0-9_-]{1,80}$/.test(args.name ?? '')) return { ok: false, error: 'invalid_name_specials' };
        return {
          ok: true,
          channel: {
            id: `C0INC${++channelCounter}`,
            name: args.name,
            is_channel: true,
            is_private: args.is_private === 'true',
            creator: botUserId,
          },
        };
      case 'conversations.invite':
        return { ok: true, channel: { id: args.channel } };
      case 'files.getUploadURLExternal': {
        const fileId = `F0FILE${++fileCounter}`;
        pendingFiles.set(fileId, { filename: args.filename, length: Number(args.length) });
        return { ok: true, upload_url: `${fake.url}/upload/${fileId}`, file_id: fileId };
      }
      case 'files.completeUploadExternal': {
        const files = (args.files ?? []) as { id: string; title?: string }[];
        const unknown = files.find((f) => !pendingFiles.has(f.id) || !uploads.some((u) => u.fileId === f.id));
        if (unknown) return { ok: false, error: 'file_not_found' };
        return {
          ok: true,
          files: files.map((f) => ({
            id: f.id,
            title: f.title ?? pendingFiles.get(f.id)!.filename,
            name: pendingFiles.get(f.id)!.filename,
          })),
        };
      }
      case 'apps.connections.open':
        return fake.socketUrl ? { ok: true, url: fake.socketUrl } : { ok: false, error: 'no_socket_url' };
      case 'views.open':
      case 'views.push':
      case 'views.update':
      case 'views.publish':
        return { ok: true, view: { id: args.view_id ?? `V${++viewCounter}`, ...(args.view ?? {}) } };
      default:
        return { ok: false, error: 'unknown_method' };
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const raw = bytes.toString('utf8');
      const path = (req.url ?? '/').split('?')[0];
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (path.startsWith('/response/')) {
        const id = decodeURIComponent(path.slice('/response/'.length));
        responses.push({ id, body: parseBody(raw, req.headers['content-type']), headers: req.headers, at: Date.now() });
        return send(200, { ok: true });
      }
      if (path.startsWith('/upload/')) {
        // files.slack.com answers a good upload with 200 and a plain "OK".
        uploads.push({
          fileId: decodeURIComponent(path.slice('/upload/'.length)),
          contentType: req.headers['content-type'],
          body: bytes,
        });
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.end('OK - ' + bytes.length);
      }
      if (path.startsWith('/api/')) {
        const method = path.slice('/api/'.length);
        const args = parseBody(raw, req.headers['content-type']);
        const limit = limits.get(method);
        if (limit && limit.times > 0) {
          limit.times -= 1;
          calls.push({ method, args, headers: req.headers, at: Date.now(), rateLimited: true });
          return send(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(limit.retryAfter) });
        }
        calls.push({ method, args, headers: req.headers, at: Date.now(), rateLimited: false });
        return send(200, answer(method, args));
      }
      send(404, { ok: false, error: 'not_found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  fake = {
    url,
    apiUrl: `${url}/api/`,
    port,
    calls,
    responses,
    uploads,
    callsTo: (method) => calls.filter((c) => c.method === method && !c.rateLimited),
    responsesTo: (id) => responses.filter((r) => r.id === id),
    responseUrl: (id) => `${url}/response/${encodeURIComponent(id ?? `r${++responseCounter}`)}`,
    rateLimit: (method, times, retryAfter) => limits.set(method, { times, retryAfter }),
    failWith: (method, error, extra) =>
      error === undefined ? failures.delete(method) : failures.set(method, { error, extra }),
    reset: () => {
      calls.length = 0;
      responses.length = 0;
      uploads.length = 0;
      limits.clear();
      failures.clear();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

function parseBody(raw: string, contentType: string | undefined): Record<string, any> {
  if (!raw) return {};
  if (contentType?.includes('application/json')) return JSON.parse(raw) as Record<string, any>;
  const form: Record<string, any> = Object.fromEntries(new URLSearchParams(raw));
  for (const key of JSON_ARGS) {
    if (typeof form[key] === 'string') {
      try {
        form[key] = JSON.parse(form[key]);
      } catch {}
    }
  }
  return form;
}
