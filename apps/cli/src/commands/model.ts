import { resolveHomeDir, setDefaultModel } from '@hermes/core';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';

/** Registers `hermes model [set <spec>]`. */
export function registerModelCommand(program: Command): void {
  const model = program
    .command('model')
    .description('List providers and models, or set the default model')
    .addHelpText(
      'after',
      `
Examples:
  $ hermes model                                   list what is configured
  $ hermes model set anthropic:claude-sonnet-4-5   make it the default (needs ANTHROPIC_API_KEY)
  $ HERMES_BASE_URL=http://127.0.0.1:11434/v1 hermes model set qwen2.5-coder`,
    )
    .action(async () => {
      try {
        const host = await createCliHost({ connectMcp: false });
        try {
          const models = host.listModels();
          const spec = host.config.model.default ?? process.env.HERMES_MODEL ?? null;
          process.stdout.write(
            `Default model: ${spec ?? '(none: set HERMES_MODEL, or run `hermes model set provider:model`)'}\n\n`,
          );
          for (const option of models) {
            process.stdout.write(
              `${option.configured ? '✓' : ' '} ${option.spec.padEnd(48)} ${String(option.contextWindow).padStart(8)} tokens\n`,
            );
          }
          if (models.length === 0) process.stdout.write('No models are configured yet.\n');
        } finally {
          await host.close();
        }
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exitCode = 1;
      }
    });

  model
    .command('set <spec>')
    .description('Set model.default (and model.provider) in config.yaml')
    .action(async (spec: string) => {
      try {
        const host = await createCliHost({ connectMcp: false });
        try {
          const route = host.resolveModel(spec);
          await setDefaultModel(resolveHomeDir({ env: process.env }), { provider: route.provider, model: route.model });
          process.stderr.write(`Default model set to ${route.spec}.\n`);
        } finally {
          await host.close();
        }
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exitCode = 1;
      }
    });
}
