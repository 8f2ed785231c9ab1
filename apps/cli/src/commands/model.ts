import { type AgentHost, BUILTIN_PROVIDERS, resolveHomeDir, setDefaultModel } from '@hermes/core';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';
import { guideUrl } from '../links.js';

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
          if (models.length === 0) process.stdout.write(`No models are configured yet.\n\n${providersText(host)}`);
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

/** An example model per built-in provider, for the table `hermes model` shows before any is set up. */
const EXAMPLE_MODELS: Record<string, string> = {
  openai: 'gpt-5-mini',
  anthropic: 'claude-sonnet-4-5',
  openrouter: 'anthropic/claude-sonnet-4.5',
  ollama: 'qwen2.5-coder',
  vllm: 'Qwen/Qwen2.5-Coder-7B-Instruct',
  llamacpp: 'default',
  lmstudio: 'qwen2.5-coder-7b-instruct',
  custom: 'your-model',
};

/**
 * The providers a model can come from and what each needs: the built-ins (with the variable that
 * holds the key or the address) and the endpoints named under `providers:` in config.yaml.
 */
export function providersText(host: Pick<AgentHost, 'config' | 'lookupEnv'>): string {
  const rows = Object.values(BUILTIN_PROVIDERS).map((provider) => {
    const needs: string[] = [];
    if (provider.keyVariable !== null)
      needs.push(
        `${provider.keyVariable}${provider.requiresKey ? '' : ' (optional)'}${host.lookupEnv(provider.keyVariable) ? ' ✓' : ''}`,
      );
    if (provider.baseUrlVariable !== null)
      needs.push(
        `${provider.baseUrlVariable}${provider.defaultBaseUrl === null ? '' : ` (default ${provider.defaultBaseUrl})`}${host.lookupEnv(provider.baseUrlVariable) ? ' ✓' : ''}`,
      );
    if (needs.length === 0 && provider.defaultBaseUrl !== null) needs.push(provider.defaultBaseUrl);
    return { spec: `${provider.id}:${EXAMPLE_MODELS[provider.id] ?? '<model>'}`, needs: needs.join(', ') };
  });
  for (const [name, endpoint] of Object.entries(host.config.providers)) {
    if (name in BUILTIN_PROVIDERS) continue;
    rows.push({
      spec: `${name}:<model>`,
      needs: `config.yaml providers.${name} (${endpoint.base_url ?? 'no base_url'})`,
    });
  }
  const width = Math.max(...rows.map((row) => row.spec.length)) + 2;
  return [
    `Providers (set the variable, then \`hermes model set <provider:model>\`; guide: ${guideUrl('providers.md')}):`,
    ...rows.map((row) => `  ${row.spec.padEnd(width)}${row.needs}`),
    '',
  ].join('\n');
}
