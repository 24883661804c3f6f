// A rollcall worker in its own process, for the SIGKILL test: env SIM_INSTANCES (JSON), REDIS_URL, PREFIX.
import { startEngine } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';
import { createLogger } from '../../src/infra/log.js';

// Load everything first, then wait for "start" on stdin: the test keeps a warm spare to start after the kill.
process.stdout.write('loaded\n');
await new Promise<void>((resolve) => process.stdin.on('data', (d) => String(d).includes('start') && resolve()));
const instances = JSON.parse(process.env.SIM_INSTANCES!) as { name: string; url: string; token: string }[];
const { services } = await servicesForSim({ instances } as never);
const engine = await startEngine(services, {
  role: 'worker',
  redisUrl: process.env.REDIS_URL!,
  prefix: process.env.PREFIX!,
  runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
  ...FAST,
  // Warnings only (a lock lost, a step handed back), to stderr: what the test prints when a run does not end.
  logger: createLogger({ level: 'warn', destination: 2, name: 'worker-child' }),
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void engine.stop().then(() => process.exit(0)));
