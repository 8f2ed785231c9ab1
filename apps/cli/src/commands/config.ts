import { loadConfig, resolveHomeDir, updateConfigFile } from '@hermes/core';
import type { Command } from 'commander';
import YAML from 'yaml';
import { describeStartupError } from '../host.js';

function valueAt(root: unknown, path: string[]): unknown {
  let current = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Registers `hermes config get | set`. */
export function registerConfigCommand(program: Command): void {
  const config = program
    .command('config')
    .description('Read and change settings in HERMES_HOME/config.yaml (comments are kept)')
    .addHelpText(
      'after',
      `
Examples:
  $ hermes config get agent.max_iterations
  $ hermes config set approvals.mode smart
  $ hermes config set fallback_models '[openrouter:openai/gpt-4.1]'`,
    );

  config
    .command('get [key]')
    .description('Print the effective value of a setting (all settings without a key)')
    .action(async (key: string | undefined) => {
      try {
        const loaded = await loadConfig({ homeDir: resolveHomeDir({ env: process.env }) });
        const value = key ? valueAt(loaded.config, key.split('.')) : loaded.config;
        if (value === undefined) {
          process.stderr.write(`hermes: unknown setting "${key}".\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(typeof value === 'object' ? YAML.stringify(value) : `${String(value)}\n`);
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exitCode = 1;
      }
    });

  config
    .command('set <key> <value>')
    .description('Set a setting; the value is read as YAML (numbers, booleans, lists)')
    .action(async (key: string, raw: string) => {
      const homeDir = resolveHomeDir({ env: process.env });
      try {
        const value: unknown = YAML.parse(raw);
        await updateConfigFile(homeDir, (document) => document.setIn(key.split('.'), value));
        // Validate by loading; a bad value is reported with its key path.
        await loadConfig({ homeDir, env: {} });
        process.stderr.write(`Set ${key} in ${homeDir}/config.yaml.\n`);
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exitCode = 1;
      }
    });
}
