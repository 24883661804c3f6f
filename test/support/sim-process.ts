import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const bin = path.resolve(import.meta.dirname, '../../bin/rollcall.js');

export interface SimProcess {
  child: ChildProcess;
  /** Everything it printed on stdout so far (one `argocd NAME URL` line per instance once it listens). */
  output(): string;
}

/** Lines `rollcall sim` prints per instance it serves: `argocd NAME URL`. */
export function simInstances(out: string): string[] {
  return out.split('\n').filter((l) => l.startsWith('argocd '));
}

/**
 * `rollcall sim ARGS` as its own process, as a user starts it; resolves once its stdout satisfies `ready`
 * (by default: `instances` instances announced), fails if it exits or is not ready within 30 s. `env` is the
 * process's environment (by default this one's).
 */
export async function startSimProcess(
  args: string[],
  ready: number | ((out: string) => boolean) = 1,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SimProcess> {
  let out = '';
  const child = spawn(process.execPath, [bin, 'sim', ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
  child.stdout!.on('data', (chunk) => (out += chunk));
  const isReady = typeof ready === 'number' ? (o: string) => simInstances(o).length >= ready : ready;
  const deadline = Date.now() + 30_000;
  while (!isReady(out)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGTERM');
      throw new Error(`rollcall sim did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => out };
}
