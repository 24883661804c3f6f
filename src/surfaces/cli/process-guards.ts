import type { Logger } from '../../infra/log.js';

/** What the process-wide handlers need: a process to listen on and a way to end it (tests pass their own). */
export interface GuardedProcess {
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  on(event: 'uncaughtException', listener: (err: Error, origin: string) => void): unknown;
  exit(code: number): never;
}

function describe(reason: unknown): Record<string, unknown> {
  if (reason instanceof Error)
    return {
      name: reason.name,
      message: reason.message,
      stack: reason.stack,
      ...('code' in reason ? { code: (reason as { code: unknown }).code } : {}),
    };
  return { value: String(reason) };
}

/**
 * For the long-running process (`rollcall start`):
 * - a promise rejected where nobody awaits it (a library's request handler, a fire-and-forget call) is logged
 *   with its stack and the process keeps serving: one bad request must not end every other one in flight;
 * - an exception thrown to the event loop leaves state half-changed (a lock taken, a stream half-written), so
 *   that one is logged as fatal and the process exits 1 for its supervisor to restart it; BullMQ hands held
 *   steps to another worker.
 */
export function installProcessGuards(logger: Logger, proc: GuardedProcess = process): void {
  proc.on('unhandledRejection', (reason) => {
    logger.error({ err: describe(reason) }, 'unhandled promise rejection: logged, still serving');
  });
  proc.on('uncaughtException', (err, origin) => {
    logger.fatal({ err: describe(err), origin }, 'uncaught exception: exiting so that the process is restarted clean');
    logger.flush();
    proc.exit(1);
  });
}
