import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAcpAgent } from './acp-agent.js';
import { type CoreModule, importCore } from './core-module.js';

/** The SDK version this package is tested against (spec/acp.md §2.1). */
export const PINNED_SDK_VERSION = '2.4.0';
/** The lowest Node.js version the project supports. */
const MINIMUM_NODE = [20, 19] as const;

/** One line of `hermes acp --check`. */
export interface AcpCheckLine {
  level: 'OK' | 'WARN' | 'FAIL';
  name: string;
  detail: string;
}

/** Options of {@link runAcpSelfCheck}. */
export interface AcpCheckOptions {
  /** HERMES_HOME; defaults to the environment's. */
  homeDir?: string;
  env?: Record<string, string | undefined>;
}

async function packageVersion(specifier: string): Promise<string> {
  // Walk up from the resolved entry: the SDK does not export its package.json.
  let directory = dirname(fileURLToPath(import.meta.resolve(specifier)));
  for (;;) {
    const candidate = join(directory, 'package.json');
    if (existsSync(candidate)) {
      const manifest = JSON.parse(await readFile(candidate, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === specifier) return manifest.version ?? 'unknown';
    }
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`package.json of ${specifier} not found`);
    directory = parent;
  }
}

function onPath(program: string, env: Record<string, string | undefined>): boolean {
  return (env.PATH ?? '').split(delimiter).some((directory) => directory && existsSync(join(directory, program)));
}

/** Which sandbox commands run in (`terminal.sandbox`); a working bubblewrap that `auto` could not use is a warning. */
function sandboxLine(sandbox: {
  setting: string;
  active: string;
  network: boolean;
  reason: string | null;
}): AcpCheckLine {
  if (sandbox.active === 'bwrap')
    return {
      level: 'OK',
      name: 'sandbox',
      detail: `commands run in bubblewrap (network ${sandbox.network ? 'on' : 'off'})`,
    };
  if (sandbox.setting === 'none') return { level: 'OK', name: 'sandbox', detail: 'none (terminal.sandbox: none)' };
  return { level: 'WARN', name: 'sandbox', detail: `none: ${sandbox.reason ?? 'bubblewrap is not available'}` };
}

/** The checks that need the core: configuration, session store and credentials. */
async function coreChecks(
  core: CoreModule,
  options: AcpCheckOptions,
  env: Record<string, string | undefined>,
): Promise<AcpCheckLine[]> {
  const { createAgentHost, loadConfig, resolveHomeDir, silentLogger } = core;
  const lines: AcpCheckLine[] = [];
  const homeDir = resolveHomeDir({ homeDir: options.homeDir, env });
  let configOk = false;
  try {
    const loaded = await loadConfig({ homeDir, env, logger: silentLogger });
    configOk = true;
    lines.push({ level: 'OK', name: 'configuration', detail: `${loaded.configPath} is valid` });
    for (const [name, server] of Object.entries(loaded.config.mcp_servers ?? {})) {
      const entry = server as { command?: string; url?: string };
      if (!entry.command && !entry.url) {
        lines.push({ level: 'WARN', name: 'mcp', detail: `MCP server "${name}" has neither command nor url` });
      }
    }
  } catch (error) {
    lines.push({
      level: 'FAIL',
      name: 'configuration',
      detail: `configuration in ${homeDir} is invalid: ${error instanceof Error ? error.message : String(error)}`,
    });
  }
  if (configOk) {
    try {
      const host = await createAgentHost({ homeDir, env, connectMcp: false, logger: silentLogger });
      try {
        lines.push({ level: 'OK', name: 'session-store', detail: `${join(host.homeDir, 'state.db')} opens` });
        lines.push(sandboxLine(host.sandbox));
        const spec = host.config.model.default ?? '';
        try {
          const route = host.resolveModel(spec);
          lines.push({ level: 'OK', name: 'credentials', detail: `provider ${route.provider}, model ${route.model}` });
        } catch (error) {
          lines.push({
            level: 'FAIL',
            name: 'credentials',
            detail: `${spec ? `model ${spec}: ` : 'no default model: '}${
              error instanceof Error ? error.message : String(error)
            } (run \`hermes acp --setup\`)`,
          });
        }
      } finally {
        await host.close();
      }
    } catch (error) {
      // An explicit `terminal.sandbox: bwrap` that cannot start stops the host before its store opens.
      if ((error as { code?: unknown } | null)?.code === 'sandbox_unavailable')
        lines.push({ level: 'FAIL', name: 'sandbox', detail: (error as Error).message });
      else
        lines.push({
          level: 'FAIL',
          name: 'session-store',
          detail: `the session store does not open: ${String(error)}`,
        });
    }
  }
  return lines;
}

/**
 * The self-check of `hermes acp --check` (spec/acp.md §2.5): no network, no MCP server started,
 * no stdin. Every check yields one line; FAIL lines make the command exit 1.
 */
export async function runAcpSelfCheck(options: AcpCheckOptions = {}): Promise<AcpCheckLine[]> {
  const env = options.env ?? process.env;
  const lines: AcpCheckLine[] = [];
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const nodeOk = major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1]);
  lines.push({
    level: nodeOk ? 'OK' : 'FAIL',
    name: 'node',
    detail: `Node.js ${process.versions.node}${nodeOk ? '' : ` (needs >= ${MINIMUM_NODE.join('.')})`}`,
  });
  try {
    const version = await packageVersion('@agentclientprotocol/sdk');
    lines.push({
      level: version === PINNED_SDK_VERSION ? 'OK' : 'FAIL',
      name: 'acp-sdk',
      detail: `@agentclientprotocol/sdk ${version}${version === PINNED_SDK_VERSION ? '' : ` (expected ${PINNED_SDK_VERSION})`}`,
    });
  } catch (error) {
    lines.push({
      level: 'FAIL',
      name: 'acp-sdk',
      detail: `@agentclientprotocol/sdk does not resolve: ${String(error)}`,
    });
  }
  try {
    // Resolved, not imported: a dynamic import of the whole package would keep every zod module
    // (its 64 locales too) in a bundle of this package (ADR 0019).
    const version = await packageVersion('zod');
    lines.push({ level: 'OK', name: 'zod', detail: `zod ${version} resolves` });
  } catch (error) {
    lines.push({ level: 'FAIL', name: 'zod', detail: `zod does not resolve: ${String(error)}` });
  }
  let core: CoreModule | undefined;
  try {
    // The agent imports the core with its host; the check imports it here.
    core = await importCore();
    createAcpAgent({
      createHost: () => Promise.reject(new Error('not used')),
      version: '0',
      logger: core.silentLogger,
    });
    lines.push({ level: 'OK', name: 'adapter', detail: 'the ACP agent app builds with every v1 handler' });
  } catch (error) {
    lines.push({ level: 'FAIL', name: 'adapter', detail: `the ACP agent app does not build: ${String(error)}` });
  }
  if (core) lines.push(...(await coreChecks(core, options, env)));
  for (const program of [
    { name: 'rg', use: 'search_files' },
    { name: 'bash', use: 'terminal' },
  ]) {
    // search_files runs the ripgrep shipped with the core first, then `rg` on PATH.
    const present =
      program.name === 'rg' && core ? (await core.findRipgrep(env.PATH)) !== null : onPath(program.name, env);
    lines.push({
      level: present ? 'OK' : 'WARN',
      name: program.name,
      detail: present
        ? `${program.name} found (${program.use})`
        : `${program.name} not found; ${program.use} is limited`,
    });
  }
  return lines;
}
