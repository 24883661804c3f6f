import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { InstanceStore, SimState } from '../store.js';
import type { SimControllerPort } from './controller-port.js';
import { GrpcCode, SimApiError } from './errors.js';
import type { SimAccount } from './rbac.js';
import type { SimEventLog } from '../events.js';
import type { SimLiveObjects } from '../live-objects.js';

/** A deny sync window the faults API switched on (instance-wide, one project, or one app). */
export interface SimSyncWindow {
  instance?: string;
  project?: string;
  app?: string;
}

/** Shared by every route of one running simulator. */
export interface SimCore {
  readonly state: SimState;
  readonly controller: SimControllerPort;
  readonly keepAliveMs: number;
  /** 'argocd': resourceVersion only skips the snapshot (real server). 'replay': resend logged changes. */
  readonly watchResume: 'argocd' | 'replay';
  /** 'first-message': a watch is answered (status, headers) with its first message, as Argo CD's. 'at-once': at once. */
  readonly watchAnswer: 'first-message' | 'at-once';
  /** --frozen: serve the fixture as-is. */
  readonly frozen: boolean;
  now(): Date;
  /** Open watch streams, their instance and what they watch: closed on stop, or on demand (fault `dropStreams`). */
  readonly openStreams: Map<ServerResponse, { instance: string; watches: 'applications' | 'applicationsets' }>;
  /** Events about each Application (GET …/events without a resource). */
  readonly events?: SimEventLog;
  /** The objects on simulated clusters behind apps' resources (live Rollouts, their ReplicaSets). */
  readonly live?: SimLiveObjects;
  /**
   * The health Argo CD's SealedSecret check (Synced=True → Healthy, False → Degraded) gives a
   * SealedSecret on a simulated cluster; undefined when that cluster or object is not simulated.
   */
  sealedSecretHealth?(
    cluster: string,
    namespace: string,
    name: string,
  ): { status: 'Healthy' | 'Degraded' | 'Progressing'; message?: string } | undefined;
}

export interface ApiRequest {
  core: SimCore;
  store: InstanceStore;
  method: string;
  /** Path below the instance root, e.g. /api/v1/applications/web/sync */
  path: string;
  /** Path parameters by name (`:name` in the route pattern), URL-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** The user Argo CD would record in initiatedBy (the token's subject). */
  user: string;
  /** Who the token belongs to and what it may do. */
  account: SimAccount;
}

export type RouteResult = { status?: number; json: unknown } | { status?: number; raw: string } | 'handled';

export type RouteHandler = (req: ApiRequest) => RouteResult | Promise<RouteResult>;

/** Decodes a body as Go's encoding/json would, with its error wording. */
export function parseJsonBody(req: ApiRequest, goType: string): unknown {
  if (!req.rawBody.trim()) return {};
  try {
    return JSON.parse(req.rawBody);
  } catch {
    throw new SimApiError(GrpcCode.InvalidArgument, `invalid character in request body: cannot decode into ${goType}`);
  }
}

/** Values of a repeated query parameter, also accepting comma-joined values. */
export function queryList(query: URLSearchParams, key: string): string[] {
  return query
    .getAll(key)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

export function recordOperation(req: ApiRequest, app: string | undefined, body: unknown, status: number): void {
  req.core.state.record({
    at: req.core.now().toISOString(),
    instance: req.store.name,
    method: req.method,
    path: req.path,
    ...(app ? { app } : {}),
    body,
    status,
  } as Parameters<SimState['record']>[0]);
}
