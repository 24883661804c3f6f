import { Command } from 'commander';

export async function runCli(argv: string[]): Promise<void> {
  const program = new Command('rollcall').description('ChatOps for on-call engineers running Argo CD across many clusters');
  await program.parseAsync(argv);
}
