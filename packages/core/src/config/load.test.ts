import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HermesError } from '../errors.js';
import type { JsonObject, Logger } from '../types.js';
import { secretValues } from './environment.js';
import { loadConfig } from './load.js';
import { DEFAULT_PROTECTED_PATHS } from './schema.js';

let homeDir: string;

beforeEach(async () => {
  homeDir = await mkdtemp(path.join(tmpdir(), 'hermes-config-'));
});

afterEach(async () => {
  await chmod(homeDir, 0o700).catch(() => {});
  await rm(homeDir, { recursive: true, force: true });
});

async function writeConfig(text: string): Promise<void> {
  await writeFile(path.join(homeDir, 'config.yaml'), text);
}

function recordingLogger(): Logger & { warnings: { message: string; fields?: JsonObject }[] } {
  const warnings: { message: string; fields?: JsonObject }[] = [];
  return {
    warnings,
    debug() {},
    info() {},
    warn(message, fields) {
      warnings.push(fields === undefined ? { message } : { message, fields });
    },
    error() {},
  };
}

async function expectConfigInvalid(promise: Promise<unknown>, message: string | RegExp): Promise<HermesError> {
  const error = await promise.then(
    () => {
      throw new Error('expected config_invalid');
    },
    (caught: unknown) => caught,
  );
  expect(HermesError.isInstance(error)).toBe(true);
  const hermesError = error as HermesError;
  expect(hermesError.code).toBe('config_invalid');
  if (typeof message === 'string') expect(hermesError.message).toContain(message);
  else expect(hermesError.message).toMatch(message);
  return hermesError;
}

describe('defaults', () => {
  it('9. without configuration the budget is 90 per turn; a subagent’s is 50', async () => {
    const loaded = await loadConfig({ homeDir, env: {} });
    expect(loaded.config.agent.max_iterations).toBe(90);
    expect(loaded.config.delegation.max_iterations).toBe(50);
  });

  it('a missing config.yaml gives every default of §4.3', async () => {
    const { config, warnings, raw } = await loadConfig({ homeDir, env: {} });
    expect(warnings).toEqual([]);
    expect(raw).toEqual({});
    expect(config).toEqual({
      model: {},
      model_aliases: {},
      models: {},
      fallback_models: [],
      providers: {},
      auxiliary: { model: 'main' },
      agent: {
        max_iterations: 90,
        api_max_retries: 3,
        stream_idle_timeout: 120,
        run_budget_seconds: null,
        clarify_timeout: 300,
        max_parallel_tools: 8,
      },
      approvals: { mode: 'manual', timeout: 300, yolo: false },
      command_allowlist: [],
      compression: { enabled: true, threshold: 0.5, protect_first_n: 3, protect_last_n: 20 },
      session: { auto_title: true, lease_ttl: 300, lease_wait: 1800 },
      terminal: {
        timeout: 180,
        max_timeout: 600,
        env_passthrough: [],
        env: 'core',
        env_include: [],
        env_exclude: [],
        sandbox: 'auto',
        sandbox_network: true,
        sandbox_writable: [],
      },
      tools: { max_result_chars: 100000, disabled: [] },
      toolsets: ['file', 'terminal', 'web', 'interaction', 'delegation', 'mcp', 'client', 'browser', 'skills'],
      file: {
        write_denylist: ['~/.ssh/**', '**/.git/objects/**', '/etc/**'],
        protected_paths: [...DEFAULT_PROTECTED_PATHS],
      },
      web: { fetch_timeout: 30, max_bytes: 5242880, allow_private_hosts: [] },
      delegation: { max_iterations: 50, max_concurrent_children: 3, model: 'main' },
      mcp_servers: {},
      pricing: {},
      database: { journal_mode: 'wal' },
    });
  });

  it('a home directory that does not exist yet gives defaults and is writable', async () => {
    const loaded = await loadConfig({ homeDir: path.join(homeDir, 'not', 'yet'), env: {} });
    expect(loaded.config.approvals.timeout).toBe(300);
    expect(loaded.writable).toBe(true);
    expect(loaded.configPath).toBe(path.join(homeDir, 'not', 'yet', 'config.yaml'));
  });

  it('a section written without children (`agent:`) means its defaults', async () => {
    await writeConfig('agent:\n  # max_iterations: 10\ncompression:\ncommand_allowlist:\n');
    const { config, warnings } = await loadConfig({ homeDir, env: {} });
    expect(config.agent.max_iterations).toBe(90);
    expect(config.compression.threshold).toBe(0.5);
    expect(config.command_allowlist).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('mcp server entries get their §15.1 defaults', async () => {
    await writeConfig('mcp_servers:\n  files:\n    command: npx\n    args: [server]\n');
    const { config } = await loadConfig({ homeDir, env: {} });
    expect(config.mcp_servers.files).toEqual({
      command: 'npx',
      args: ['server'],
      env: {},
      headers: {},
      enabled: true,
      timeout: 120,
      connect_timeout: 60,
      tools: {},
    });
  });
});

describe('precedence', () => {
  it('overrides beat the environment, which beats .env, which beats config.yaml', async () => {
    await writeConfig('model:\n  default: openai:from-file\nagent:\n  max_iterations: 10\n');
    await writeFile(path.join(homeDir, '.env'), 'HERMES_MODEL=openai:from-dotenv\nHERMES_MAX_ITERATIONS=20\n');

    const fileAndDotenv = await loadConfig({ homeDir, env: {} });
    expect(fileAndDotenv.config.model.default).toBe('openai:from-dotenv');
    expect(fileAndDotenv.config.agent.max_iterations).toBe(20);

    const withEnvironment = await loadConfig({
      homeDir,
      env: { HERMES_MODEL: 'openai:from-env', HERMES_MAX_ITERATIONS: '30' },
    });
    expect(withEnvironment.config.model.default).toBe('openai:from-env');
    expect(withEnvironment.config.agent.max_iterations).toBe(30);

    const withOverrides = await loadConfig({
      homeDir,
      env: { HERMES_MODEL: 'openai:from-env', HERMES_MAX_ITERATIONS: '30' },
      overrides: { model: { default: 'openai:from-code' }, agent: { max_iterations: 40 } },
    });
    expect(withOverrides.config.model.default).toBe('openai:from-code');
    expect(withOverrides.config.agent.max_iterations).toBe(40);
  });

  it('config.yaml beats the defaults and overrides merge key by key', async () => {
    await writeConfig('agent:\n  max_iterations: 12\n  api_max_retries: 1\n');
    const { config } = await loadConfig({ homeDir, env: {}, overrides: { agent: { api_max_retries: 5 } } });
    expect(config.agent.max_iterations).toBe(12);
    expect(config.agent.api_max_retries).toBe(5);
    expect(config.agent.clarify_timeout).toBe(300);
  });

  it('HERMES_YOLO_MODE sets approvals.yolo only for 1 or true', async () => {
    for (const value of ['1', 'true', 'TRUE']) {
      const { config } = await loadConfig({ homeDir, env: { HERMES_YOLO_MODE: value } });
      expect(config.approvals.yolo).toBe(true);
    }
    for (const value of ['0', 'false', 'yes', '']) {
      const { config } = await loadConfig({ homeDir, env: { HERMES_YOLO_MODE: value } });
      expect(config.approvals.yolo).toBe(false);
    }
  });

  it('HERMES_BASE_URL maps to model.base_url; HERMES_API_KEY never enters the configuration', async () => {
    const { config, lookup } = await loadConfig({
      homeDir,
      env: { HERMES_BASE_URL: 'http://127.0.0.1:9/v1', HERMES_API_KEY: 'hermes-secret-key' },
    });
    expect(config.model.base_url).toBe('http://127.0.0.1:9/v1');
    expect(config.model.api_key).toBeUndefined();
    expect(JSON.stringify(config)).not.toContain('hermes-secret-key');
    expect(lookup('HERMES_API_KEY')).toBe('hermes-secret-key');
  });

  it('only settings with an environment mapping come from the environment', async () => {
    const { config } = await loadConfig({ homeDir, env: { AGENT_MAX_ITERATIONS: '3', HERMES_APPROVALS_MODE: 'off' } });
    expect(config.agent.max_iterations).toBe(90);
    expect(config.approvals.mode).toBe('manual');
  });

  it('an invalid HERMES_MAX_ITERATIONS fails with config_invalid naming the variable', async () => {
    const error = await expectConfigInvalid(
      loadConfig({ homeDir, env: { HERMES_MAX_ITERATIONS: 'lots' } }),
      'agent.max_iterations: expected integer ≥ 1',
    );
    expect(error.message).toContain('HERMES_MAX_ITERATIONS');
  });
});

describe('.env', () => {
  it('is parsed into a private map and never copied into process.env', async () => {
    const name = `HERMES_CONFIG_TEST_${process.pid}_PRIVATE`;
    await writeFile(path.join(homeDir, '.env'), `# secrets\n${name}=from-dotenv\nOPENAI_API_KEY="sk-dotenv-value"\n`);
    const loaded = await loadConfig({ homeDir, env: {} });
    expect(loaded.dotenv).toEqual({ [name]: 'from-dotenv', OPENAI_API_KEY: 'sk-dotenv-value' });
    expect(loaded.lookup(name)).toBe('from-dotenv');
    expect(process.env[name]).toBeUndefined();
    expect(Object.keys(process.env)).not.toContain(name);
  });

  it('the environment wins over .env and empty values count as unset', async () => {
    await writeFile(path.join(homeDir, '.env'), 'OPENAI_API_KEY=from-dotenv\nANTHROPIC_API_KEY=from-dotenv\n');
    const loaded = await loadConfig({ homeDir, env: { OPENAI_API_KEY: 'from-env', ANTHROPIC_API_KEY: '' } });
    expect(loaded.lookup('OPENAI_API_KEY')).toBe('from-env');
    expect(loaded.lookup('ANTHROPIC_API_KEY')).toBe('from-dotenv');
    expect(loaded.lookup('MISSING_VARIABLE')).toBeUndefined();
  });
});

describe('unknown keys and protocol-owned sections', () => {
  it('warn once per unknown key, keep them in raw, and stay out of the typed configuration', async () => {
    await writeConfig(
      [
        'colour: blue',
        'agent:',
        '  max_iterations: 7',
        '  max_iteratoins: 8',
        'mcp_servers:',
        '  files:',
        '    command: npx',
        '    autostart: true',
        'providers:',
        '  local:',
        '    base_url: http://localhost:1234',
        '    colour: red',
        '',
      ].join('\n'),
    );
    const logger = recordingLogger();
    const loaded = await loadConfig({ homeDir, env: {}, logger });
    const expected = [
      "config.yaml: unknown key 'colour' is ignored",
      "config.yaml: unknown key 'agent.max_iteratoins' is ignored",
      "config.yaml: unknown key 'mcp_servers.files.autostart' is ignored",
      "config.yaml: unknown key 'providers.local.colour' is ignored",
    ];
    expect(loaded.warnings).toEqual(expected);
    expect(logger.warnings.map((warning) => warning.message)).toEqual(expected);
    expect(loaded.config.agent.max_iterations).toBe(7);
    expect(loaded.raw.colour).toBe('blue');
    expect(Object.keys(loaded.config)).not.toContain('colour');
  });

  it('the sections of §24.9 produce no warning and are exposed raw', async () => {
    await writeConfig(
      [
        'display:',
        '  busy_input_mode: queue',
        '  tool_progress: all',
        'tui_gateway:',
        '  ws_orphan_reap_grace_s: 20',
        'acp:',
        '  anything: [1, 2]',
        'api_server:',
        '  model_name: hermes-agent',
        'server:',
        '  port: 8642',
        '',
      ].join('\n'),
    );
    const logger = recordingLogger();
    const loaded = await loadConfig({ homeDir, env: {}, logger });
    expect(loaded.warnings).toEqual([]);
    expect(logger.warnings).toEqual([]);
    expect(loaded.section('display')).toEqual({ busy_input_mode: 'queue', tool_progress: 'all' });
    expect(loaded.section('tui_gateway')).toEqual({ ws_orphan_reap_grace_s: 20 });
    expect(loaded.section('acp')).toEqual({ anything: [1, 2] });
    expect(loaded.section('api_server')).toEqual({ model_name: 'hermes-agent' });
    expect(loaded.section('server')).toEqual({ port: 8642 });
    expect(loaded.section('absent')).toBeUndefined();
  });

  it('an mcp server with neither command nor url is a warning, not a failure', async () => {
    await writeConfig('mcp_servers:\n  broken:\n    enabled: true\n');
    const loaded = await loadConfig({ homeDir, env: {} });
    expect(loaded.warnings).toEqual([
      'config.yaml: mcp_servers.broken: expected either command or url; the server is skipped',
    ]);
  });
});

describe('invalid values', () => {
  it.each([
    ['agent:\n  max_iterations: 0\n', 'agent.max_iterations: expected integer ≥ 1'],
    ['agent:\n  max_iterations: many\n', 'agent.max_iterations: expected integer ≥ 1'],
    ['agent:\n  max_iterations: 2.5\n', 'agent.max_iterations: expected integer ≥ 1'],
    ['approvals:\n  mode: sometimes\n', 'approvals.mode: expected one of manual, smart, off'],
    ['compression:\n  threshold: 1.5\n', 'compression.threshold: expected a ratio between 0 and 1'],
    ['approvals:\n  yolo: maybe\n', 'approvals.yolo: expected true or false'],
    ['agent: 5\n', 'agent: expected a mapping'],
    ['fallback_models: [openai:gpt-4o, 3]\n', 'fallback_models[1]: expected a string'],
    ['mcp_servers:\n  files:\n    args: not-a-list\n', 'mcp_servers.files.args: expected a list of strings'],
    [
      'pricing:\n  openai:gpt-4o:\n    input: -1\n',
      'pricing.openai:gpt-4o.input: expected a price per million tokens ≥ 0',
    ],
    ['model:\n  reasoning_effort: extreme\n', 'model.reasoning_effort: expected one of none, low, medium, high'],
    ['database:\n  journal_mode: truncate\n', 'database.journal_mode: expected one of wal, delete'],
  ])('%j fails with config_invalid naming the key path', async (text, message) => {
    await writeConfig(text);
    const error = await expectConfigInvalid(loadConfig({ homeDir, env: {} }), message);
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('an invalid override is reported the same way', async () => {
    await expectConfigInvalid(
      loadConfig({ homeDir, env: {}, overrides: { delegation: { max_concurrent_children: 0 } } }),
      'delegation.max_concurrent_children: expected integer ≥ 1',
    );
  });

  it('a YAML syntax error or a top level that is not a mapping fails with config_invalid', async () => {
    await writeConfig('model:\n  api_key: sk-written-in-the-file\n  max_tokens: [1, 2\n');
    const syntax = await expectConfigInvalid(loadConfig({ homeDir, env: {} }), /^config\.yaml: line 4, column 1: /);
    expect(syntax.message).not.toContain('sk-written-in-the-file');
    await writeConfig('- just\n- a list\n');
    await expectConfigInvalid(loadConfig({ homeDir, env: {} }), 'config.yaml: expected a mapping at the top level');
  });

  it('run_budget_seconds accepts null', async () => {
    await writeConfig('agent:\n  run_budget_seconds: null\n');
    expect((await loadConfig({ homeDir, env: {} })).config.agent.run_budget_seconds).toBeNull();
    await writeConfig('agent:\n  run_budget_seconds: 60\n');
    expect((await loadConfig({ homeDir, env: {} })).config.agent.run_budget_seconds).toBe(60);
  });
});

describe('writable', () => {
  /**
   * Permission bits do not bind root, so as root the read-only cases run the check in a child
   * process that loads the built package as root (the checkout may sit in a folder only root can
   * enter, such as a `mktemp -d` clone), then drops to the unprivileged user `nobody` before it
   * calls loadConfig.
   */
  async function writableAs(home: string): Promise<boolean> {
    if (process.getuid?.() !== 0) return (await loadConfig({ homeDir: home, env: {} })).writable;
    const entry = pathToFileURL(fileURLToPath(new URL('../../dist/index.js', import.meta.url))).href;
    const script = [
      `const core = await import(${JSON.stringify(entry)});`,
      'process.setgroups([65534]);',
      'process.setgid(65534);',
      'process.setuid(65534);',
      `const loaded = await core.loadConfig({ homeDir: ${JSON.stringify(home)}, env: {} });`,
      'process.stdout.write(JSON.stringify({ uid: process.getuid(), writable: loaded.writable }));',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: tmpdir(),
    });
    const answer = JSON.parse(stdout) as { uid: number; writable: boolean };
    expect(answer.uid).toBe(65534);
    return answer.writable;
  }

  /** Lets `nobody` reach the test's home directory. */
  async function openUpPath(target: string): Promise<void> {
    for (let current = target; current !== path.dirname(current); current = path.dirname(current)) {
      if (current === tmpdir()) break;
      await chmod(current, 0o755).catch(() => {});
    }
  }

  it('is true for a writable file', async () => {
    await writeConfig('agent:\n  max_iterations: 5\n');
    expect((await loadConfig({ homeDir, env: {} })).writable).toBe(true);
  });

  it('is false for a read-only file', async () => {
    await writeConfig('agent:\n  max_iterations: 5\n');
    await openUpPath(homeDir);
    await chmod(path.join(homeDir, 'config.yaml'), 0o444);
    expect(await writableAs(homeDir)).toBe(false);
  });

  it('is false for a missing file in a read-only home directory', async () => {
    const readOnly = path.join(homeDir, 'readonly');
    await mkdir(readOnly);
    await openUpPath(readOnly);
    await chmod(readOnly, 0o555);
    try {
      expect(await writableAs(readOnly)).toBe(false);
    } finally {
      await chmod(readOnly, 0o700);
    }
  });
});

describe('secretValues', () => {
  it('collects secret-looking variables from the environment, .env and the configuration', async () => {
    await writeFile(
      path.join(homeDir, '.env'),
      'OPENROUTER_API_KEY=or-dotenv-key\nGITHUB_TOKEN=gh-dotenv-token\nPLAIN=visible\n',
    );
    await writeConfig(
      [
        'model:',
        '  api_key: config-model-key',
        'providers:',
        '  together:',
        '    base_url: https://api.together.xyz/v1',
        '    api_key_env: TOGETHER_KEY',
        '',
      ].join('\n'),
    );
    const loaded = await loadConfig({
      homeDir,
      env: {
        OPENAI_API_KEY: 'sk-env-value',
        HERMES_API_KEY: 'hermes-env-key',
        DB_PASSWORD: 'db-password',
        SESSION_SECRET: 'session-secret',
        TOGETHER_KEY: 'together-key',
        HOME: '/home/someone',
        HERMES_BASE_URL: 'http://127.0.0.1:1/v1',
      },
    });
    const secrets = secretValues(loaded);
    expect(new Set(secrets)).toEqual(
      new Set([
        'sk-env-value',
        'hermes-env-key',
        'db-password',
        'session-secret',
        'or-dotenv-key',
        'gh-dotenv-token',
        'config-model-key',
        'together-key',
      ]),
    );
  });
});
