// CLI entry; subcommands are wired in src/cli/.
import { runCli } from './cli/index.js';

await runCli(process.argv);
