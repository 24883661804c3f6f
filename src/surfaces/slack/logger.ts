import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from 'pino';

// Bolt and the WebClient log request details as strings; a token must never reach a log line.
const TOKEN = /\b(xox[abposr]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+)/g;

export function redactTokens(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(TOKEN, '[redacted]');
  if (value instanceof Error) {
    const copy = new Error(String(redactTokens(value.message)));
    copy.name = value.name;
    copy.stack = value.stack ? String(redactTokens(value.stack)) : undefined;
    return copy;
  }
  return value;
}

/** Bolt's Logger on top of pino, so Slack logs share our format and redaction. */
export function boltLogger(logger: Logger): BoltLogger {
  let level: LogLevel = LogLevel.INFO;
  const child = logger.child({ component: 'slack' });
  const write =
    (lvl: 'debug' | 'info' | 'warn' | 'error') =>
    (...msg: unknown[]) => {
      const parts = msg.map(redactTokens);
      const err = parts.find((p): p is Error => p instanceof Error);
      const text = parts
        .filter((p) => !(p instanceof Error))
        .map((p) => (typeof p === 'string' ? p : safeJson(p)))
        .join(' ');
      if (err) child[lvl]({ err }, text || err.message);
      else child[lvl](text);
    };
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    // Bolt sets INFO on every logger it is given; the level is pino's to decide (LOG_LEVEL), so only remember it.
    setLevel(l: LogLevel) {
      level = l;
    },
    getLevel: () => level,
    setName() {},
  };
}

function safeJson(value: unknown): string {
  try {
    return String(redactTokens(JSON.stringify(value)));
  } catch {
    return String(value);
  }
}
