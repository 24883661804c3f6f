// One rollcall worker process for the chaos suite. Env: SIM_INSTANCES (JSON), REDIS_URL, PREFIX,
// LOCK_MS, STALLED_MS, ARGO_TIMEOUT_MS, RATE_MAX, RATE_PER_MS. Prints "ready" once its engine runs;
// logs (info and up) go to stderr as JSON lines.
import { createLogger } from '../../src/infra/log.js';
import { startEngine } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { chaosServices } from './services.js';

const instances = JSON.parse(process.env.SIM_INSTANCES!) as { name: string; url: string; token: string }[];
const logger = createLogger({ level: 'info', destination: 2, name: `worker-${process.pid}` });
const { services } = await chaosServices(instances);
const engine = await startEngine(services, {
  role: 'worker',
  redisUrl: process.env.REDIS_URL!,
  prefix: process.env.PREFIX!,
  runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
  timing: {
    lockDurationMs: Number(process.env.LOCK_MS),
    stalledIntervalMs: Number(process.env.STALLED_MS),
    maxStalledCount: 1000,
  },
  controlPollMs: 200,
  retryBackoffMs: 200,
  concurrency: 5,
  logger,
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void engine.stop().then(() => process.exit(0)));
