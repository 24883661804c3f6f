import { typedDuration } from '../../core/format.js';
import { bodyExcerpt, isTlsErrorCode } from '../http/failures.js';
import { RollcallError } from '../../core/errors.js';
import type { ArgoErrorBody } from './types.js';

/**
 * What the Argo CD client made of a failure. The client and its callers branch on it (retry, verify,
 * wait); users see it as the error code `argocd_<kind>`. The message already says what to do.
 */
export type ArgoErrorCode =
  | 'forbidden'
  | 'not_found'
  | 'unauthenticated'
  | 'conflict'
  /** gRPC Aborted (HTTP 409): Kubernetes refused an update whose resourceVersion is no longer current. */
  | 'modified'
  | 'invalid'
  | 'unavailable'
  | 'rate_limited'
  | 'timeout'
  | 'network'
  /** FailedPrecondition "another operation is already in progress" (B4). */
  | 'operation_in_progress'
  /** InvalidArgument "No operation is in progress" from terminating an operation: nothing is running. */
  | 'no_operation'
  /** FailedPrecondition "rollback cannot be initiated when auto-sync is enabled". */
  | 'auto_sync_enabled'
  /** A watch resumed from a resourceVersion the server no longer has (HTTP 410): relist. */
  | 'expired'
  /** A 2xx answer whose body is not the JSON the endpoint promises (cut short, a proxy's page, the wrong shape). */
  | 'bad_response';

/** gRPC status codes Argo CD puts in `code` of its error body. */
export const GrpcCode = {
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;

export interface ArgoErrorInit {
  kind: ArgoErrorCode;
  instance: string;
  status?: number;
  grpcCode?: number;
  argoMessage?: string;
  /** The request may have been applied by the server even though the call failed (e.g. a sync retried after a 502). */
  maybeApplied?: boolean;
  retryable?: boolean;
}

export class ArgoError extends RollcallError {
  override readonly name = 'ArgoError';
  declare readonly code: `argocd_${ArgoErrorCode}`;
  readonly kind: ArgoErrorCode;
  readonly instance: string;
  readonly status?: number;
  readonly grpcCode?: number;
  /** Argo CD's own message, verbatim. */
  readonly argoMessage?: string;
  readonly maybeApplied: boolean;
  constructor(message: string, init: ArgoErrorInit) {
    super(`argocd_${init.kind}`, message, { userMessage: `Argo CD instance ${init.instance}: ${message}` });
    this.kind = init.kind;
    this.instance = init.instance;
    this.status = init.status;
    this.grpcCode = init.grpcCode;
    this.argoMessage = init.argoMessage;
    this.maybeApplied = init.maybeApplied ?? false;
  }
}

export function isArgoError(error: unknown, kind?: ArgoErrorCode): error is ArgoError {
  return error instanceof ArgoError && (kind === undefined || error.kind === kind);
}

/** What a call was doing, so an error can name the permission, the app and the project. */
export interface CallContext {
  instance: string;
  /** Base URL of the instance, for network errors (never includes the token). */
  url: string;
  method: string;
  /** Path below /api/v1, e.g. `/applications/foo/sync`. */
  path: string;
  /** The RBAC resource (argocd-rbac-cm) the call needs. */
  resource: 'applications' | 'applicationsets' | 'clusters' | 'logs' | 'projects';
  /**
   * The RBAC action (B1): get for reads, sync for sync/terminate, update for patch and upsert, and
   * `action/<group>/<kind>/<action>` for a resource action.
   */
  action: 'get' | 'sync' | 'update' | 'create' | `action/${string}`;
  app?: string;
  appSet?: string;
  project?: string;
  timeoutMs: number;
}

// Argo CD says these only in its message text; they are read here, once, into a kind.
const IN_PROGRESS = /another operation is already in progress/i;
const NO_OPERATION = /no operation is in progress/i;
const SYNC_WINDOW = /blocked by sync window/i;
const AUTO_SYNC_ON = /rollback cannot be initiated when auto-sync is enabled/i;
const NO_SUCH_ACTION = /error getting Lua resource action: built-in script does not exist/i;
const SCRIPT_FAILED = /error executing Lua (?:resource action|discovery script): (.*)$/is;
const NOT_IN_TREE = /^(\S+) (\S*) ?(\S+) not found as part of application (\S+)$/;

function describeTarget(ctx: CallContext): string {
  if (ctx.resource === 'projects' && ctx.project) return `AppProject ${ctx.project} on instance ${ctx.instance}`;
  if (ctx.app) return `app ${ctx.app} on instance ${ctx.instance}`;
  if (ctx.appSet) return `ApplicationSet ${ctx.appSet} on instance ${ctx.instance}`;
  return `instance ${ctx.instance}`;
}

/** An HTTP error answer as the mappers below read it: what was called, what came back, what to quote. */
interface ErrorAnswer {
  ctx: CallContext;
  status: number;
  grpcCode?: number;
  argoMessage?: string;
  /** What every ArgoError made of this answer carries. */
  base: Omit<ArgoErrorInit, 'kind'>;
  /** Argo CD's message, quoted for the end of a sentence, or ''. */
  said: string;
}

/** 401 (the token) and 407 (a proxy on the way, not Argo CD). */
function authError({ ctx, status, grpcCode, base }: ErrorAnswer): ArgoError | undefined {
  if (status === 401 || grpcCode === GrpcCode.Unauthenticated) {
    return new ArgoError(
      `Argo CD instance ${ctx.instance} rejected the token (HTTP ${status}): it is invalid or expired. ` +
        'Mint a new one (`argocd account generate-token --account rollcall`) and update instances[].token in rollcall.yaml.',
      { ...base, kind: 'unauthenticated' },
    );
  }
  if (status === 407) {
    // The answer is the proxy's, not Argo CD's: HTTPS_PROXY / HTTP_PROXY name one that wants credentials.
    return new ArgoError(
      `The proxy on the way to Argo CD instance ${ctx.instance} asks for credentials (HTTP 407 Proxy Authentication Required): ` +
        'put them in the proxy URL, `HTTPS_PROXY=https://user:password@proxy:port` (percent-encode special characters).',
      { ...base, kind: 'network' },
    );
  }
  return undefined;
}

/** 403: a sync window, or the RBAC line the token lacks. */
function forbiddenError({ ctx, status, grpcCode, argoMessage, base, said }: ErrorAnswer): ArgoError | undefined {
  if (status !== 403 && grpcCode !== GrpcCode.PermissionDenied) return undefined;
  if (argoMessage && SYNC_WINDOW.test(argoMessage)) {
    return new ArgoError(
      `Sync of ${describeTarget(ctx)} is blocked by a sync window.${said} Wait for the window to open, or change the AppProject's syncWindows.`,
      { ...base, kind: 'forbidden' },
    );
  }
  const project = ctx.project ?? (ctx.resource === 'clusters' || ctx.resource === 'projects' ? '*' : '<project>');
  // Projects are RBAC objects by name; a resource action is granted per app; applications and the rest by <project>/<name>.
  const object =
    ctx.resource === 'clusters'
      ? '*'
      : ctx.resource === 'projects'
        ? project
        : ctx.action.startsWith('action/') && ctx.app
          ? `${project}/${ctx.app}`
          : `${project}/*`;
  const scope =
    ctx.resource === 'clusters'
      ? 'clusters'
      : ctx.resource === 'projects'
        ? `project ${project}`
        : `${ctx.resource} in project ${project}`;
  let message =
    `Token lacks \`${ctx.action}\` on ${scope} (${describeTarget(ctx)}): ` +
    `add \`p, role:rollcall, ${ctx.resource}, ${ctx.action}, ${object}, allow\` to argocd-rbac-cm.`;
  // B1: without project=, Argo CD answers 403 both for a forbidden app and for a missing one.
  if (ctx.app && !ctx.project) message += ` If app ${ctx.app} does not exist, Argo CD answers 403 too: check the name.`;
  return new ArgoError(message, { ...base, kind: 'forbidden' });
}

/** 404 (no such app, ApplicationSet or endpoint), 410 (a watch too old to resume) and 429. */
function missingOrLimitedError({ ctx, status, grpcCode, base, said }: ErrorAnswer): ArgoError | undefined {
  if (status === 404 || grpcCode === GrpcCode.NotFound) {
    let message: string;
    if (ctx.resource === 'projects') message = `No such AppProject ${ctx.project ?? ''} on instance ${ctx.instance}.`;
    else if (ctx.app)
      message = `No such app ${ctx.app} on instance ${ctx.instance}${ctx.project ? ` (project ${ctx.project})` : ''}.`;
    else if (ctx.appSet) message = `No such ApplicationSet ${ctx.appSet} on instance ${ctx.instance}.`;
    else
      message = `Argo CD instance ${ctx.instance} has no ${ctx.method} ${ctx.path} (HTTP 404): check instances[].url and its root path.`;
    return new ArgoError(message + said, { ...base, kind: 'not_found' });
  }
  if (status === 410) {
    return new ArgoError(
      `Watch on instance ${ctx.instance} cannot resume: the resourceVersion is too old. Relisting.`,
      { ...base, kind: 'expired' },
    );
  }
  if (status === 429 || grpcCode === GrpcCode.ResourceExhausted) {
    return new ArgoError(
      `Argo CD instance ${ctx.instance} is rate limiting rollcall (HTTP ${status}). Try again in a minute.${said}`,
      { ...base, kind: 'rate_limited' },
    );
  }
  return undefined;
}

/** Refusals Argo CD names only in its message text: an operation running, auto-sync on, nothing to terminate. */
function operationStateError({ ctx, argoMessage, base }: ErrorAnswer): ArgoError | undefined {
  if (!argoMessage) return undefined;
  if (IN_PROGRESS.test(argoMessage)) {
    const message = base.maybeApplied
      ? `An operation is already running on ${describeTarget(ctx)}. An earlier attempt of this call failed in transit, so it probably ` +
        `started that operation: check the app before syncing again.`
      : `Another operation is already in progress on ${describeTarget(ctx)}: wait for it to finish, or terminate it, then retry.`;
    return new ArgoError(message, { ...base, kind: 'operation_in_progress' });
  }
  if (AUTO_SYNC_ON.test(argoMessage)) {
    // Auto-sync would put git's revision straight back, so Argo CD refuses; rollcall's pause turns it off reversibly.
    return new ArgoError(
      `Argo CD refused to roll back ${describeTarget(ctx)}: "${argoMessage}". Turn auto-sync off first (\`pause ${ctx.app ?? 'APP'}\` does, and \`resume\` restores it), then roll back.`,
      { ...base, kind: 'auto_sync_enabled' },
    );
  }
  if (NO_OPERATION.test(argoMessage)) {
    return new ArgoError(`No operation is running on ${describeTarget(ctx)}: there is nothing to terminate.`, {
      ...base,
      kind: 'no_operation',
    });
  }
  return undefined;
}

/**
 * The resource endpoints' refusals (server/application/application.go): an action the kind has no script for, a
 * script that fails on the live object (both plain Go errors, HTTP 500, not worth retrying), a resource that is
 * not in the app's tree.
 */
function resourceError({ ctx, argoMessage, base }: ErrorAnswer): ArgoError | undefined {
  if (!argoMessage) return undefined;
  const [, group, kind, action] = /^action\/([^/]*)\/([^/]+)\/(.+)$/.exec(ctx.action) ?? [];
  if (NO_SUCH_ACTION.test(argoMessage))
    return new ArgoError(
      `Argo CD has no action \`${action ?? '?'}\` for ${group ? `${group}/` : ''}${kind ?? 'this kind'} (${describeTarget(ctx)}): ` +
        `\`actions ${ctx.app ?? 'APP'}\` lists the ones it offers.`,
      { ...base, kind: 'invalid' },
    );
  const failed = SCRIPT_FAILED.exec(argoMessage);
  if (failed)
    return new ArgoError(
      `Argo CD's script for ${action ? `action \`${action}\`` : 'the resource actions'} failed on the live object (${describeTarget(ctx)}): ${failed[1]}`,
      { ...base, kind: 'invalid' },
    );
  if (NOT_IN_TREE.test(argoMessage))
    return new ArgoError(`No such resource in the tree of ${describeTarget(ctx)}: Argo CD said "${argoMessage}".`, {
      ...base,
      kind: 'not_found',
    });
  return undefined;
}

/** 409 and the gRPC preconditions (a conflict), 400 and 422 (an invalid request). */
function refusedError({ ctx, status, grpcCode, argoMessage, base }: ErrorAnswer): ArgoError | undefined {
  if (grpcCode === GrpcCode.Aborted) {
    return new ArgoError(
      `${describeTarget(ctx)} changed since rollcall read it (Argo CD said: "${argoMessage ?? `HTTP ${status}`}"): read it again before changing it.`,
      { ...base, kind: 'modified' },
    );
  }
  if (
    status === 409 ||
    grpcCode === GrpcCode.FailedPrecondition ||
    grpcCode === GrpcCode.AlreadyExists ||
    grpcCode === GrpcCode.Aborted
  ) {
    return new ArgoError(
      `Argo CD refused ${ctx.method} on ${describeTarget(ctx)}: ${argoMessage ?? `HTTP ${status}`}`,
      { ...base, kind: 'conflict' },
    );
  }
  if (status === 400 || status === 422 || grpcCode === GrpcCode.InvalidArgument) {
    return new ArgoError(
      `Argo CD rejected the request for ${describeTarget(ctx)}: ${argoMessage ?? `HTTP ${status}`}`,
      { ...base, kind: 'invalid' },
    );
  }
  return undefined;
}

/** Anything else, an upstream timeout (504) included: Argo CD is unavailable for now. */
function unavailableError({ ctx, status, grpcCode, base, said }: ErrorAnswer): ArgoError {
  if (status === 504 || grpcCode === GrpcCode.DeadlineExceeded) {
    return new ArgoError(
      `Argo CD instance ${ctx.instance} timed out upstream (HTTP ${status}) on ${ctx.method} ${ctx.path}. Try again shortly.${said}`,
      { ...base, kind: 'unavailable' },
    );
  }
  return new ArgoError(
    `Argo CD instance ${ctx.instance} failed ${ctx.method} ${ctx.path} (HTTP ${status}). Try again shortly.${said}`,
    { ...base, kind: 'unavailable' },
  );
}

/** In the order they are tried: a status or gRPC code, or Argo CD's message text, picks the first that answers. */
const RESPONSE_MAPPERS = [
  authError,
  forbiddenError,
  missingOrLimitedError,
  operationStateError,
  resourceError,
  refusedError,
];

/** Maps an HTTP error answer from Argo CD to an ArgoError whose message says what to do. */
export function errorFromResponse(
  ctx: CallContext,
  status: number,
  body: unknown,
  extra?: { maybeApplied?: boolean },
): ArgoError {
  const parsed = parseErrorBody(body);
  const argoMessage = parsed.message ?? parsed.error;
  const grpcCode = parsed.code;
  const base = { instance: ctx.instance, status, grpcCode, argoMessage, maybeApplied: extra?.maybeApplied };
  const answer: ErrorAnswer = {
    ctx,
    status,
    grpcCode,
    argoMessage,
    base,
    said: argoMessage ? ` Argo CD said: "${argoMessage}"` : '',
  };
  for (const map of RESPONSE_MAPPERS) {
    const error = map(answer);
    if (error) return error;
  }
  return unavailableError(answer);
}

/** Maps a failure without an HTTP answer (timeout, refused, reset, TLS). */
export function errorFromTransport(
  ctx: CallContext,
  errorCode: string | undefined,
  detail: string,
  extra?: { maybeApplied?: boolean },
): ArgoError {
  const base = { instance: ctx.instance, maybeApplied: extra?.maybeApplied };
  if (errorCode === 'ETIMEDOUT' || errorCode === 'ECONNABORTED') {
    return new ArgoError(
      `Argo CD instance ${ctx.instance} did not answer ${ctx.method} ${ctx.path} within ${typedDuration(ctx.timeoutMs)} ` +
        `(instances[].timeout). Check that ${ctx.url} is up, or raise the timeout.`,
      { ...base, kind: 'timeout' },
    );
  }
  if (isTlsErrorCode(errorCode)) {
    return new ArgoError(
      `TLS verification of Argo CD instance ${ctx.instance} (${ctx.url}) failed: ${errorCode}. ` +
        'Set instances[].tls.caFile to the CA that signed its certificate (or tls.insecureSkipVerify: true for a test instance).',
      { ...base, kind: 'network' },
    );
  }
  return new ArgoError(
    `Cannot reach Argo CD instance ${ctx.instance} at ${ctx.url}: ${errorCode ?? detail}. Check the URL and the network path.`,
    {
      ...base,
      kind: 'network',
    },
  );
}

/**
 * A 2xx answer that is not what the endpoint promises. Reading it as the promised shape would turn a
 * broken upstream into an empty fleet, so it is an error that quotes the body's first bytes.
 */
export function errorFromBadBody(
  ctx: CallContext,
  body: string,
  problem: string,
  extra?: { maybeApplied?: boolean },
): ArgoError {
  const start = bodyExcerpt(body);
  return new ArgoError(
    `Argo CD instance ${ctx.instance} answered ${ctx.method} ${ctx.path} with a body that is not what Argo CD sends (${problem}); ` +
      `${start ? `it starts ${start}` : 'it is empty'}. A proxy in front of Argo CD may be cutting answers short or serving its own page: ` +
      `check instances[].url and the proxy.`,
    { instance: ctx.instance, kind: 'bad_response', maybeApplied: extra?.maybeApplied },
  );
}

export function parseErrorBody(body: unknown): ArgoErrorBody {
  if (body && typeof body === 'object') return body as ArgoErrorBody;
  if (typeof body === 'string' && body.trim()) {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (parsed && typeof parsed === 'object') return parsed as ArgoErrorBody;
    } catch {
      // A proxy's HTML or plain-text error page: keep its first line as the message.
      return { message: body.trim().split('\n')[0].slice(0, 200) };
    }
  }
  return {};
}
