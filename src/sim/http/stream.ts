import type { Application, ApplicationSet } from '../../infra/argocd/types.js';
import { filterJsonPaths, parseFields } from '../fields.js';
import type { StoreChange } from '../store.js';
import { appMatches, parseAppQuery, rbacName, sortedApps } from './apps.js';
import { appSetMatches, appSetRbacName, parseAppSetQuery, sortedAppSets } from './appsets.js';
import type { ApiRequest, RouteResult } from './context.js';
import { appJsonFull } from './json.js';
import { allowed } from './rbac.js';

/**
 * Watch streams as argoproj/pkg grpc/http forwards them (B5): SSE (`data: {...}\n\n` plus a `:`
 * keep-alive) when `Accept: text/event-stream`, else newline-delimited JSON. An event whose body
 * (after the `fields` filter) is byte-identical to the last one sent for that name is dropped.
 *
 * Answer: upstream's response (status and headers) goes out with the first message, so a watch without a snapshot over
 * objects that do not change stays unanswered; the keep-alives start once it is answered. `watchAnswer: 'at-once'`
 * answers at once instead.
 *
 * Resume: the real server treats `resourceVersion` only as "skip the snapshot, and drop events for
 * objects older than this"; it replays nothing missed while disconnected. That is the default here
 * too, so a client that trusts resume to fill a gap fails against the simulator as it would in
 * production. `watchResume: 'replay'` opts into replaying the store's change log instead (with a
 * 410-style error event when the version is older than the log keeps).
 */
type Kind = 'application' | 'applicationSet';

function startStream(
  req: ApiRequest,
  watches: 'applications' | 'applicationsets',
): { send(name: string, body: string): void; end(): void; sse: boolean } {
  const sse = req.headers.accept === 'text/event-stream';
  const res = req.res;
  let keepAlive: NodeJS.Timeout | undefined;
  const answer = () => {
    if (res.headersSent) return;
    res.writeHead(200, {
      'content-type': sse ? 'text/event-stream' : 'application/json',
      'cache-control': 'no-cache',
    });
    res.flushHeaders();
    if (!sse) return;
    keepAlive = setInterval(() => res.write(':\n'), req.core.keepAliveMs);
    keepAlive.unref();
  };
  // Upstream's gateway waits for the gRPC stream's header, which the server sends with its first event, and starts
  // the SSE keep-alives after it: a watch that skips the snapshot is unanswered until something it follows changes.
  if (req.core.watchAnswer === 'at-once') answer();
  req.core.openStreams.set(res, { instance: req.store.name, watches });
  const last = new Map<string, string>();
  const cleanup = () => {
    if (keepAlive) clearInterval(keepAlive);
    req.core.openStreams.delete(res);
  };
  res.on('close', cleanup);
  return {
    sse,
    send(name, body) {
      if (last.get(name) === body) return;
      last.set(name, body);
      answer();
      res.write(sse ? `data: ${body}\n\n` : `${body}\n`);
    },
    end() {
      cleanup();
      answer();
      res.end();
    },
  };
}

function eventBody(kind: Kind, type: string, objectJson: string, fields: ReturnType<typeof parseFields>): string {
  const raw = `{"result":{"type":"${type}","${kind}":${objectJson}}}`;
  return fields ? JSON.stringify(filterJsonPaths(JSON.parse(raw), fields)) : raw;
}

function tooOld(rv: number) {
  return JSON.stringify({
    error: {
      grpc_code: 11,
      http_code: 410,
      message: `too old resource version: ${rv}`,
      http_status: 'Gone',
      details: [],
    },
  });
}

function watch<T extends Application | ApplicationSet>(
  req: ApiRequest,
  kind: Kind,
  snapshot: () => T[],
  matches: (o: T) => boolean,
  changesSince: (rv: number) => StoreChange<T>[] | undefined,
  storeEvent: 'app' | 'appset',
  serialize: (o: T) => string,
  name: string | undefined,
): RouteResult {
  const fields = parseFields(req.query.get('fields'));
  const rvText = req.query.get('resourceVersion');
  const minVersion = rvText && /^\d+$/.test(rvText) ? Number(rvText) : 0;
  const stream = startStream(req, kind === 'application' ? 'applications' : 'applicationsets');
  const emit = (type: string, o: T) => {
    // Upstream drops events for objects older than the requested version (isApplicationPermitted).
    if (Number(o.metadata.resourceVersion ?? 0) < minVersion) return;
    if (!matches(o)) return;
    stream.send(objectKey(o), eventBody(kind, type, serialize(o), fields));
  };
  if (!rvText || name) {
    for (const o of snapshot()) emit('ADDED', o);
  } else if (req.core.watchResume === 'replay') {
    const missed = changesSince(minVersion);
    if (!missed) {
      stream.send('', tooOld(minVersion));
      stream.end();
      return 'handled';
    }
    for (const change of missed)
      if (matches(change.object))
        stream.send(objectKey(change.object), eventBody(kind, change.type, serialize(change.object), fields));
  }
  const onChange = (change: StoreChange<T>) => {
    if (!matches(change.object)) return;
    if (change.type !== 'DELETED' && Number(change.object.metadata.resourceVersion ?? 0) < minVersion) return;
    stream.send(objectKey(change.object), eventBody(kind, change.type, serialize(change.object), fields));
  };
  req.store.events.on(storeEvent, onChange);
  req.res.on('close', () => req.store.events.off(storeEvent, onChange));
  return 'handled';
}

export function watchApplications(req: ApiRequest): RouteResult {
  const q = parseAppQuery(req.query);
  return watch<Application>(
    req,
    'application',
    () => sortedApps(req.store, q),
    (a) => appMatches(a, q) && allowed(req.account, 'applications', 'get', rbacName(a)),
    (rv) => req.store.appChangesSince(rv),
    'app',
    appJsonFull,
    q.name,
  );
}

export function watchApplicationSets(req: ApiRequest): RouteResult {
  const q = parseAppSetQuery(req.query);
  return watch<ApplicationSet>(
    req,
    'applicationSet',
    () => sortedAppSets(req.store, q),
    (a) => appSetMatches(a, q) && allowed(req.account, 'applicationsets', 'get', appSetRbacName(a)),
    (rv) => req.store.appSetChangesSince(rv),
    'appset',
    (a) => JSON.stringify(a),
    q.name,
  );
}

/** What the server dedupes events by: apps in different namespaces may share a name. */
function objectKey(o: { metadata: { name: string; namespace?: string } }): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}
