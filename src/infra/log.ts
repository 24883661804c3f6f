import { pino, type Logger } from 'pino';

/**
 * The one logger. Secrets never reach logs: known secret fields are redacted wherever they
 * appear (config objects, request headers, cluster `config` blocks from Argo CD).
 */
export const REDACT_PATHS = [
  'token',
  '*.token',
  '*.*.token',
  'botToken',
  '*.botToken',
  'appToken',
  '*.appToken',
  'signingSecret',
  '*.signingSecret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'config.bearerToken',
  '*.config',
  'data',
  '*.data',
];

export function createLogger(options: { level?: string; destination?: 1 | 2; name?: string } = {}): Logger {
  return pino(
    {
      name: options.name ?? 'rollcall',
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    pino.destination({ dest: options.destination ?? 2, sync: false }),
  );
}

export type { Logger };
