import { Command } from 'commander';
import { VERSION } from './version.js';

/**
 * Builds the `hermes` command tree. Output goes through `writeOut`/`writeErr` so the stdio
 * protocol modes can keep stdout for frames only.
 */
export function createProgram(): Command {
  const program = new Command('hermes')
    .description('Hermes: one agent core driven from IDEs (ACP), custom hosts (TUI gateway) and HTTP.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', 'show help')
    .showHelpAfterError('(run `hermes --help` for usage)')
    .addHelpText(
      'after',
      `
Examples:
  $ hermes --version          print the version
  $ hermes --help             show this help`,
    );
  return program;
}
