/**
 * The stable error codes: the `error.code` of `rollcall ask --json`, and the exit code each one means.
 * README lists them; a code, once shipped, keeps its meaning.
 */

/** How `rollcall ask` exits on a code: usage and config errors 2, a command that failed 1. */
export type ExitClass = 'usage' | 'config' | 'failed';

export interface ErrorCodeSpec {
  exit: ExitClass;
  /** What the code means, for the README table and for readers of `--json`. */
  meaning: string;
}

export const ERROR_CODES = {
  // The request itself is wrong: fix the command text and run it again.
  usage: { exit: 'usage', meaning: 'the command text is malformed (missing target, unknown flag, too many words)' },
  unknown_command: { exit: 'usage', meaning: 'no such command' },
  command_too_long: { exit: 'usage', meaning: 'the command text is longer than rollcall reads' },
  invalid_selector: { exit: 'usage', meaning: 'a label selector or glob that does not parse' },
  invalid_params: { exit: 'usage', meaning: 'runbook parameters that do not fit the runbook' },
  unknown_param: { exit: 'usage', meaning: 'a parameter the runbook does not take' },
  // The configuration or an environment rollcall needs is missing.
  config_invalid: { exit: 'config', meaning: 'rollcall.yaml does not validate' },
  config_exists: { exit: 'usage', meaning: '`rollcall init` would overwrite an existing file' },
  unknown_scenario: { exit: 'usage', meaning: 'no built-in simulator scenario of that name' },
  redis_unavailable: { exit: 'config', meaning: 'Redis is unreachable and the command needs it' },
  prometheus_unavailable: { exit: 'config', meaning: 'a private Prometheus was asked for and none could be started' },
  slack_not_configured: { exit: 'config', meaning: 'no `slack` section in the config' },
  // The command was understood and did not succeed.
  unknown_target: { exit: 'failed', meaning: 'no app, ApplicationSet or cluster matches' },
  ambiguous_target: { exit: 'failed', meaning: 'a name matches on several instances: add instance=' },
  unknown_cluster: { exit: 'failed', meaning: 'no Kubernetes cluster of that name in kube.clusters' },
  unknown_runbook: { exit: 'failed', meaning: 'no runbook of that name is loaded' },
  unknown_action: { exit: 'failed', meaning: 'a button or form action rollcall does not know' },
  runbook_invalid: { exit: 'failed', meaning: 'a runbook file does not validate' },
  runbook_dir_empty: { exit: 'failed', meaning: 'the runbooks directory holds no runbook files' },
  forbidden: { exit: 'failed', meaning: 'the user may not do this' },
  channel_not_allowed: { exit: 'failed', meaning: 'rollcall does not answer in this channel' },
  run_not_found: { exit: 'failed', meaning: 'no run with that id' },
  runs_unavailable: { exit: 'failed', meaning: 'this process has no runbook engine (it needs Redis)' },
  no_worker: {
    exit: 'failed',
    meaning: 'the run is confirmed and queued, but no rollcall worker is connected to this Redis to run it',
  },
  invalid_state: { exit: 'failed', meaning: 'the run is not in a state that allows this' },
  lease_lost: {
    exit: 'failed',
    meaning: 'a step attempt lost its lease (a newer attempt, a pause or an abort took it) and stopped',
  },
  preview_failed: { exit: 'failed', meaning: 'the runbook could not be previewed' },
  blast_radius: {
    exit: 'failed',
    meaning: 'a sync too wide for one wave: split it into waves, add a canary, or confirm the app count',
  },
  locked: { exit: 'failed', meaning: 'another run holds locks on some of the target apps' },
  not_configured: {
    exit: 'failed',
    meaning: 'the action needs configuration that is missing (kube clusters, pause store)',
  },
  nothing_to_pause: { exit: 'failed', meaning: 'the ApplicationSet has nothing a pause would stop' },
  already_paused: { exit: 'failed', meaning: 'the ApplicationSet is already paused' },
  not_paused: { exit: 'failed', meaning: 'the ApplicationSet is not paused by rollcall' },
  already_frozen: { exit: 'failed', meaning: 'rollcall (or an identical window) already freezes that scope' },
  not_frozen: { exit: 'failed', meaning: 'rollcall has no freeze of that target' },
  auto_sync_enabled: {
    exit: 'failed',
    meaning: 'a rollback of an app whose auto-sync is on: Argo CD refuses it, turn auto-sync off first',
  },
  unknown_history_id: { exit: 'failed', meaning: "no deployment with that id in the app's history (status.history)" },
  nothing_to_terminate: { exit: 'failed', meaning: 'no selected app has an operation in progress' },
  action_not_offered: {
    exit: 'failed',
    meaning:
      'Argo CD does not offer that resource action on the resource now (no such action for its kind, or disabled)',
  },
  // Incidents.
  incident_not_found: { exit: 'failed', meaning: 'no incident with that id' },
  incident_ambiguous: { exit: 'failed', meaning: 'several incidents are open: name one (the error lists them)' },
  incident_none_open: { exit: 'failed', meaning: 'no incident is open and none was named' },
  incident_closed: { exit: 'failed', meaning: 'the incident is closed: reopen it first' },
  incident_not_closed: { exit: 'failed', meaning: 'the incident is open: nothing to reopen' },
  alert_not_found: { exit: 'failed', meaning: 'no alert with that id (active or recently resolved)' },
  alert_not_active: { exit: 'failed', meaning: 'the alert is resolved (or not firing yet): nothing to ack or snooze' },
  // Kubernetes API answers (sealed-secrets runbooks).
  not_found: { exit: 'failed', meaning: 'a Kubernetes object does not exist' },
  conflict: { exit: 'failed', meaning: 'a Kubernetes or Argo CD object changed or already exists' },
  unauthenticated: { exit: 'failed', meaning: 'Kubernetes rejected the credentials' },
  unavailable: { exit: 'failed', meaning: 'Kubernetes (or a store rollcall needs) did not answer' },
  invalid: { exit: 'failed', meaning: 'Kubernetes rejected the request' },
  // Argo CD API answers, by what the client made of them.
  argocd_forbidden: { exit: 'failed', meaning: 'the Argo CD token lacks a permission, or a sync window blocks it' },
  argocd_not_found: { exit: 'failed', meaning: 'Argo CD has no such object' },
  argocd_unauthenticated: { exit: 'failed', meaning: 'Argo CD rejected the token' },
  argocd_conflict: { exit: 'failed', meaning: 'Argo CD refused the change (conflict, precondition)' },
  argocd_modified: {
    exit: 'failed',
    meaning: 'the object changed since it was read (resourceVersion conflict): read it again before changing it',
  },
  argocd_invalid: { exit: 'failed', meaning: 'Argo CD rejected the request as invalid' },
  argocd_unavailable: { exit: 'failed', meaning: 'Argo CD failed or timed out upstream' },
  argocd_rate_limited: { exit: 'failed', meaning: 'Argo CD is rate limiting rollcall' },
  argocd_timeout: { exit: 'failed', meaning: 'Argo CD did not answer within instances[].timeout' },
  argocd_network: { exit: 'failed', meaning: 'Argo CD is unreachable (network, TLS)' },
  argocd_operation_in_progress: { exit: 'failed', meaning: 'another operation is running on the app' },
  argocd_no_operation: { exit: 'failed', meaning: 'no operation is running on the app: nothing to terminate' },
  argocd_auto_sync_enabled: {
    exit: 'failed',
    meaning: 'Argo CD does not roll back an app while its auto-sync is on: turn it off first',
  },
  argocd_expired: { exit: 'failed', meaning: 'a watch resumed from a resourceVersion Argo CD no longer has' },
  argocd_bad_response: {
    exit: 'failed',
    meaning: 'Argo CD (or a proxy in front of it) answered 2xx with a body that is not the JSON the endpoint promises',
  },
  // Prometheus answers, for the metric checks.
  unknown_check: { exit: 'failed', meaning: 'no metric check of that name in the config `checks`' },
  check_placeholder: {
    exit: 'failed',
    meaning:
      "a check's query names a label or field the app does not have (`{{labels.team}}` on an app without `team`)",
  },
  prometheus_unreachable: {
    exit: 'failed',
    meaning: 'Prometheus could not be reached or did not answer the query (network, TLS, timeout, 5xx, a wrong URL)',
  },
  prometheus_unauthorized: {
    exit: 'failed',
    meaning: 'Prometheus (or a proxy in front of it) refused the configured token or basic auth (HTTP 401/403)',
  },
  prometheus_query_error: {
    exit: 'failed',
    meaning:
      "Prometheus rejected a check's PromQL query, or it does not evaluate to a number (Prometheus' text is in the message)",
  },
  prometheus_bad_response: {
    exit: 'failed',
    meaning: 'Prometheus (or a proxy in front of it) answered 2xx with a body that is not the JSON envelope of its API',
  },
  // Slack.
  slack_auth_failed: { exit: 'failed', meaning: 'Slack rejected the bot token' },
  slack_listen_failed: { exit: 'failed', meaning: 'the Slack receiver could not start' },
  slack_rate_limited: { exit: 'failed', meaning: 'Slack kept answering 429 after every retry rollcall allows' },
  slack_channel_not_found: {
    exit: 'failed',
    meaning: 'no Slack channel with that id, or a private one the bot was not invited to',
  },
  slack_not_in_channel: { exit: 'failed', meaning: 'the bot is not a member of the Slack channel' },
  slack_missing_scope: { exit: 'failed', meaning: 'the Slack app lacks an OAuth scope the call needs' },
  slack_api_error: {
    exit: 'failed',
    meaning: 'Slack refused a Web API call for another reason (its error is in the message)',
  },
  slack_unreachable: {
    exit: 'failed',
    meaning: 'the Slack Web API could not be reached or answered with an HTTP error',
  },
  // rollcall itself.
  stored_record_invalid: {
    exit: 'failed',
    meaning: 'a record rollcall stored in Redis does not decode (another version wrote it, or a hand edit)',
  },
  internal: { exit: 'failed', meaning: 'rollcall failed outside any command (a bug)' },
  internal_error: { exit: 'failed', meaning: 'a command failed unexpectedly (a bug)' },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Process exit codes of `rollcall` (DESIGN: 0 ok, 1 the command failed, 2 usage or configuration error). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The exit code for a reply's error code; a code outside the table is a failure. */
export function exitCodeFor(code: string | undefined): number {
  if (code === undefined) return EXIT_OK;
  const exit = isErrorCode(code) ? ERROR_CODES[code].exit : 'failed';
  return exit === 'failed' ? EXIT_FAILED : EXIT_USAGE;
}
