import * as z from 'zod';

/*
 * The typed form of config.yaml (spec/core.md §4.3). Every leaf carries its own error text so that
 * `config_invalid` messages read `agent.max_iterations: expected integer ≥ 1` rather than zod's
 * generic wording. Objects use `prefault({})` so their children's defaults apply when the whole
 * section is absent (zod 4's `default()` would return the literal without parsing it).
 */

const mapping = 'expected a mapping';

function integer(minimum: number) {
  const error = `expected integer ≥ ${minimum}`;
  return z.int({ error }).min(minimum, { error });
}

function seconds() {
  const error = 'expected a number of seconds ≥ 0';
  return z.number({ error }).min(0, { error });
}

function text() {
  return z.string({ error: 'expected a string' });
}

function flag() {
  return z.boolean({ error: 'expected true or false' });
}

function textList() {
  return z.array(text(), { error: 'expected a list of strings' });
}

function textMap() {
  return z.record(z.string(), text(), { error: mapping });
}

function choice<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `expected one of ${values.join(', ')}` });
}

/** Reasoning effort levels accepted by `model.reasoning_effort` and sessions (spec/core.md §10.5, §24.3). */
export const REASONING_EFFORTS = ['none', 'low', 'medium', 'high'] as const;
/** A reasoning effort level. */
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** The toolsets of v1, all enabled by default (spec/core.md §11.1). */
export const DEFAULT_TOOLSETS: readonly string[] = [
  'file',
  'terminal',
  'web',
  'interaction',
  'delegation',
  'mcp',
  'client',
  'browser',
  'skills',
];

/**
 * Default of `file.protected_paths` (issue 32): what no file tool reads or writes. `$HERMES_HOME`
 * stands for the home directory of Hermes.
 */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = [
  '$HERMES_HOME/.env',
  '$HERMES_HOME/.env.*',
  '$HERMES_HOME/config.yaml',
  '$HERMES_HOME/config.yml',
  '$HERMES_HOME/state.db*',
  '$HERMES_HOME/auth*',
  '$HERMES_HOME/auth/**',
  '$HERMES_HOME/**/*.key',
  '$HERMES_HOME/**/*.pem',
];

/** Default of `file.write_denylist` (spec/core.md §4.3). */
export const DEFAULT_WRITE_DENYLIST: readonly string[] = ['~/.ssh/**', '**/.git/objects/**', '/etc/**'];

/**
 * Top-level config.yaml sections owned by the protocol packages and apps (spec/core.md §24.9): kept
 * without unknown-key warnings and exposed raw through `LoadedConfig.section()`.
 */
export const PROTOCOL_OWNED_SECTIONS: readonly string[] = ['display', 'tui_gateway', 'acp', 'api_server', 'server'];

const modelSchema = z.object(
  {
    default: text().optional(),
    provider: text().optional(),
    base_url: text().optional(),
    api_key: text().optional(),
    context_length: integer(1).optional(),
    max_tokens: integer(1).optional(),
    reasoning_effort: choice(REASONING_EFFORTS).optional(),
  },
  { error: mapping },
);

const modelEntrySchema = z.object({ context_length: integer(1).optional() }, { error: mapping });

/**
 * `providers.<id>`: a named OpenAI-compatible endpoint, or settings for a built-in or registered
 * provider of the same id. `strict_alternation` has no default here so that an entry for a
 * built-in provider does not switch off that provider's own rule; named endpoints default to false.
 */
const providerEntrySchema = z.object(
  {
    base_url: text().optional(),
    api_key_env: text().optional(),
    api_key: text().optional(),
    strict_alternation: flag().optional(),
    context_length: integer(1).optional(),
    models: textList().default(() => []),
  },
  { error: mapping },
);

/** `mcp_servers.<name>` (spec/core.md §15.1). Whether it has `command` or `url` is checked by the MCP manager. */
const mcpServerSchema = z.object(
  {
    command: text().optional(),
    args: textList().default(() => []),
    env: textMap().default(() => ({})),
    cwd: text().optional(),
    url: text().optional(),
    headers: textMap().default(() => ({})),
    enabled: flag().default(true),
    timeout: seconds().default(120),
    connect_timeout: seconds().default(60),
    tools: z
      .object({ include: textList().optional(), exclude: textList().optional() }, { error: mapping })
      .prefault({}),
  },
  { error: mapping },
);

const priceError = 'expected a price per million tokens ≥ 0';
const price = () => z.number({ error: priceError }).min(0, { error: priceError });

/** `pricing.<spec>`: USD per million tokens (spec/core.md §17.2). Missing rates fall back to the shipped table. */
const pricingEntrySchema = z.object(
  {
    input: price().optional(),
    output: price().optional(),
    cache_read: price().optional(),
    cache_write: price().optional(),
  },
  { error: mapping },
);

/** The zod schema of config.yaml with every default of spec/core.md §4.3. */
export const hermesConfigSchema = z.object(
  {
    model: modelSchema.prefault({}),
    model_aliases: z.record(z.string(), text(), { error: mapping }).default(() => ({})),
    models: z.record(z.string(), modelEntrySchema, { error: mapping }).default(() => ({})),
    fallback_models: textList().default(() => []),
    providers: z.record(z.string(), providerEntrySchema, { error: mapping }).default(() => ({})),
    auxiliary: z.object({ model: text().default('main') }, { error: mapping }).prefault({}),
    agent: z
      .object(
        {
          system_prompt: text().optional(),
          max_iterations: integer(1).default(90),
          api_max_retries: integer(0).default(3),
          stream_idle_timeout: seconds().default(120),
          run_budget_seconds: seconds().nullable().default(null),
          clarify_timeout: seconds().default(300),
          max_parallel_tools: integer(1).default(8),
        },
        { error: mapping },
      )
      .prefault({}),
    approvals: z
      .object(
        {
          mode: choice(['manual', 'smart', 'off']).default('manual'),
          timeout: seconds().default(300),
          yolo: flag().default(false),
        },
        { error: mapping },
      )
      .prefault({}),
    // An exact command (`- command: rm -rf ./build`), an explicit class (`- pattern: sudo`), or a
    // bare key written by older versions, read but not honoured (docs/adr/0034).
    command_allowlist: z
      .array(
        z.union([
          text(),
          z.strictObject({ command: text().min(1, { error: 'expected a command' }) }),
          z.strictObject({ pattern: text().min(1, { error: 'expected a pattern key' }) }),
        ]),
        { error: 'expected a list of commands (`command: …`) or pattern classes (`pattern: …`)' },
      )
      .default(() => []),
    compression: z
      .object(
        {
          enabled: flag().default(true),
          threshold: z
            .number({ error: 'expected a ratio between 0 and 1' })
            .gt(0, { error: 'expected a ratio between 0 and 1' })
            .max(1, { error: 'expected a ratio between 0 and 1' })
            .default(0.5),
          protect_first_n: integer(0).default(3),
          protect_last_n: integer(0).default(20),
        },
        { error: mapping },
      )
      .prefault({}),
    session: z
      .object(
        {
          auto_title: flag().default(true),
          lease_ttl: seconds().default(300),
          lease_wait: seconds().default(1800),
        },
        { error: mapping },
      )
      .prefault({}),
    terminal: z
      .object(
        {
          timeout: seconds().default(180),
          max_timeout: seconds().default(600),
          env_passthrough: textList().default(() => []),
          // Issue 32: the subprocess environment is an allowlist (`core`), and commands run in an OS sandbox.
          env: choice(['core', 'all', 'none']).default('core'),
          env_include: textList().default(() => []),
          env_exclude: textList().default(() => []),
          sandbox: choice(['auto', 'bwrap', 'none']).default('auto'),
          sandbox_network: flag().default(true),
          sandbox_writable: textList().default(() => []),
          bwrap_path: text().optional(),
        },
        { error: mapping },
      )
      .prefault({}),
    tools: z
      .object(
        {
          max_result_chars: integer(1).default(100000),
          disabled: textList().default(() => []),
        },
        { error: mapping },
      )
      .prefault({}),
    toolsets: textList().default(() => [...DEFAULT_TOOLSETS]),
    file: z
      .object(
        {
          write_denylist: textList().default(() => [...DEFAULT_WRITE_DENYLIST]),
          protected_paths: textList().default(() => [...DEFAULT_PROTECTED_PATHS]),
        },
        { error: mapping },
      )
      .prefault({}),
    web: z
      .object(
        {
          fetch_timeout: seconds().default(30),
          max_bytes: integer(1).default(5242880),
          // Hosts, addresses and CIDR ranges web_fetch may reach although they are not public (ADR 0035).
          allow_private_hosts: textList().default(() => []),
        },
        { error: mapping },
      )
      .prefault({}),
    delegation: z
      .object(
        {
          max_iterations: integer(1).default(50),
          max_concurrent_children: integer(1).default(3),
          model: text().default('main'),
        },
        { error: mapping },
      )
      .prefault({}),
    mcp_servers: z.record(z.string(), mcpServerSchema, { error: mapping }).default(() => ({})),
    pricing: z.record(z.string(), pricingEntrySchema, { error: mapping }).default(() => ({})),
    database: z
      .object(
        // `url`: a postgres:// URL selects the PostgreSQL store (HERMES_DATABASE_URL overrides it).
        { journal_mode: choice(['wal', 'delete']).default('wal'), url: text().optional() },
        { error: mapping },
      )
      .prefault({}),
  },
  { error: mapping },
);

/** The resolved settings of spec/core.md §4.3, with every default applied. */
export type HermesConfig = z.output<typeof hermesConfigSchema>;
/** One `mcp_servers.<name>` entry (spec/core.md §15.1). */
export type McpServerConfig = HermesConfig['mcp_servers'][string];
/** One `providers.<id>` entry (spec/core.md §10.3). */
export type ProviderConfig = HermesConfig['providers'][string];
/** One `pricing.<spec>` entry (spec/core.md §17.2). */
export type PricingConfig = HermesConfig['pricing'][string];

/** The configuration with nothing set: every default of spec/core.md §4.3. */
export function defaultConfig(): HermesConfig {
  return hermesConfigSchema.parse({});
}

/**
 * Says what is wrong with an `mcp_servers` entry whose fields are individually valid, or null. A
 * malformed server does not fail the configuration (spec/core.md §15.2: it fails on its own).
 */
export function mcpServerProblem(server: McpServerConfig): string | null {
  if (server.command === undefined && server.url === undefined) return 'expected either command or url';
  if (server.command !== undefined && server.url !== undefined) return 'expected either command or url, not both';
  return null;
}
