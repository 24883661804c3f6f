// CLI entry; subcommands are wired in src/surfaces/cli/.
import { runCli } from './surfaces/cli/index.js';

await runCli(process.argv);
