import { Console } from 'node:console';
import type { Command } from 'commander';
import { VERSION } from '../version.js';

/**
 * Routes every console method and `process.stdout.write` to stderr and returns the original stdout
 * write, which only the ACP writer may use (spec/acp.md §2.3). Runs before the protocol and core
 * modules are imported by the server mode.
 */
function claimStdout(): (chunk: Uint8Array, callback: (error?: Error | null) => void) => boolean {
  const originalWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) =>
    process.stderr.write(
      chunk as string,
      encoding as BufferEncoding,
      callback as () => void,
    )) as typeof process.stdout.write;
  // A console bound to stderr only, so every method (log, info, table…) lands there.
  const stderrConsole = new Console({ stdout: process.stderr, stderr: process.stderr });
  for (const method of ['log', 'info', 'debug', 'warn', 'error', 'trace', 'dir', 'table'] as const) {
    (console as unknown as Record<string, unknown>)[method] = (
      stderrConsole[method] as (...values: unknown[]) => void
    ).bind(stderrConsole);
  }
  return (chunk, callback) => originalWrite(chunk, callback);
}

/** A writable web stream over the saved stdout write, keeping stdout's back-pressure. */
function stdoutWriter(
  write: (chunk: Uint8Array, callback: (error?: Error | null) => void) => boolean,
  onFailure: () => void,
): WritableStream<Uint8Array> {
  return new WritableStream<Uint8Array>({
    write(chunk) {
      return new Promise<void>((resolve, reject) => {
        write(chunk, (error) => {
          if (error) {
            onFailure();
            reject(error);
          } else resolve();
        });
      });
    },
  });
}

/** The most the first line may take to be looked at before the SDK loads. */
const FIRST_LINE_LIMIT = 64 * 1024;

/**
 * Reads stdin up to its first newline and puts what it read back, so the SDK later reads the
 * input from its start. Resolves with that first line, or no line when stdin ended first or the
 * line is longer than {@link FIRST_LINE_LIMIT}. When stdin ended, `ended` holds every byte it gave
 * (an ended stream takes nothing back).
 */
function peekFirstLine(): Promise<{ line: string | undefined; ended: Buffer | undefined }> {
  const stdin = process.stdin;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const finish = (line: string | undefined, ended: boolean) => {
      stdin.off('readable', onReadable);
      stdin.off('end', onEnd);
      const read = Buffer.concat(chunks);
      if (!ended && read.length > 0) stdin.unshift(read);
      resolve({ line, ended: ended ? read : undefined });
    };
    const onReadable = () => {
      for (let chunk = stdin.read() as Buffer | null; chunk !== null; chunk = stdin.read() as Buffer | null) {
        const newline = chunk.indexOf(10);
        chunks.push(chunk);
        if (newline >= 0) return finish(Buffer.concat(chunks, length + newline).toString('utf8'), false);
        length += chunk.length;
        if (length > FIRST_LINE_LIMIT) return finish(undefined, false);
      }
    };
    const onEnd = () => finish(undefined, true);
    stdin.on('readable', onReadable);
    stdin.on('end', onEnd);
  });
}

async function serve(): Promise<void> {
  const write = claimStdout();
  // An editor's first message is `initialize`, and its answer needs neither the SDK nor the core:
  // it is written before either loads, and the SDK later reads the same request and answers it
  // again, an answer that is not sent (docs/adr/0019). Any other first line goes to the SDK.
  const [{ answerInitializeEarly }, first] = await Promise.all([
    import('@hermes/protocol-acp/initialize'),
    peekFirstLine(),
  ]);
  const early = first.line === undefined ? undefined : answerInitializeEarly(first.line, VERSION);
  if (early) write(Buffer.from(early.reply), () => undefined);
  // Only the ACP SDK and the logger load before the SDK reads `initialize`; the core (its store,
  // tools and config schemas) loads with the host, right after the response (spec/acp.md §2.4).
  const [{ Readable }, { createAcpAgent, serveAcp }, { createStderrLogger }] = await Promise.all([
    import('node:stream'),
    import('@hermes/protocol-acp'),
    import('@hermes/core/logger'),
  ]);
  const level = (process.env.HERMES_LOG_LEVEL as 'debug' | 'info' | 'warn' | 'error' | undefined) ?? 'warn';
  const logger = createStderrLogger({ level });
  const agent = createAcpAgent({
    version: VERSION,
    logger,
    createHost: async () => (await import('../host.js')).createCliHost({ connectMcp: false, logger }),
  });
  const input = Readable.toWeb(
    first.ended === undefined ? process.stdin : Readable.from([first.ended]),
  ) as unknown as ReadableStream<Uint8Array>;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Ending stdin closes the connection; serveAcp then shuts the agent down.
    process.stdin.destroy();
    void agent.close().finally(() => process.exit(0));
  };
  // A stray rejection in a background task (an update for a closed client, a late store write)
  // is logged; it must not end the server with a non-zero code while the IDE still talks to it.
  process.on('unhandledRejection', (reason) => {
    logger.error(
      `acp: unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
    );
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.on('error', stop);
  // A hard limit, so that a stuck shutdown never outlives the IDE (spec/acp.md §2.4).
  const exitLater = () => setTimeout(() => process.exit(0), 7000).unref();
  await serveAcp(
    agent,
    { input, output: stdoutWriter(write, stop) },
    { ...(early ? { answeredInitialize: early.id } : {}), logger },
  ).catch((error: unknown) => {
    logger.error(`acp: ${error instanceof Error ? error.message : String(error)}`);
  });
  exitLater();
  process.exit(0);
}

async function check(): Promise<number> {
  const { runAcpSelfCheck } = await import('@hermes/protocol-acp');
  const lines = await runAcpSelfCheck();
  for (const line of lines) process.stdout.write(`${line.level.padEnd(4)} ${line.name}: ${line.detail}\n`);
  const failures = lines.filter((line) => line.level === 'FAIL').length;
  process.stdout.write(failures === 0 ? 'ready\n' : `${failures} check${failures === 1 ? '' : 's'} failed\n`);
  return failures === 0 ? 0 : 1;
}

async function setup(): Promise<number> {
  if (!process.stdin.isTTY) {
    process.stderr.write(
      'hermes acp --setup is interactive and needs a terminal. Run it in a terminal, or set the provider key in HERMES_HOME/.env.\n',
    );
    return 1;
  }
  const { createInterface } = await import('node:readline/promises');
  const core = await import('@hermes/core');
  const homeDir = core.resolveHomeDir({ env: process.env });
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const provider = (await terminal.question(`Provider (${core.BUILTIN_PROVIDER_IDS.join(', ')}): `)).trim();
    if (!provider) return 1;
    const model = (await terminal.question('Model: ')).trim();
    if (!model) return 1;
    const variable = (await terminal.question('Environment variable holding the API key (empty for none): ')).trim();
    if (variable) {
      const key = (await terminal.question(`${variable}: `)).trim();
      if (key) await core.writeDotenvValue(homeDir, variable, key);
    }
    await core.setDefaultModel(homeDir, { provider, model });
    const host = await core.createAgentHost({ homeDir, connectMcp: false, logger: core.silentLogger });
    try {
      const route = host.resolveModel(`${provider}:${model}`);
      process.stderr.write(`Saved: provider ${route.provider}, model ${route.model}.\n`);
    } finally {
      await host.close();
    }
    return 0;
  } catch (error) {
    process.stderr.write(`hermes acp --setup: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    terminal.close();
  }
}

/** Registers `hermes acp`: the ACP agent on stdio, `--check`, `--setup` and `--version` (spec/acp.md §2.2). */
export function registerAcpCommand(program: Command): void {
  program
    .command('acp')
    .description('serve the Agent Client Protocol on stdio (for Zed, VS Code, JetBrains)')
    .option('--check', 'check dependencies and configuration, then exit')
    .option('--setup', 'set up the provider and model interactively, then exit')
    .option('--version', 'print the version and exit')
    .configureOutput({ writeOut: (text) => process.stderr.write(text), writeErr: (text) => process.stderr.write(text) })
    .showHelpAfterError()
    .exitOverride((error) => {
      if (error.code === 'commander.unknownOption' || error.code === 'commander.excessArguments') process.exit(2);
      if (error.code === 'commander.helpDisplayed') process.exit(0);
      process.exit(error.exitCode);
    })
    .action(async (options: { check?: boolean; setup?: boolean; version?: boolean }) => {
      if (options.version) {
        process.stdout.write(`${VERSION}\n`);
        process.exit(0);
      }
      if (options.check) process.exit(await check());
      if (options.setup) process.exit(await setup());
      await serve();
    });
}
