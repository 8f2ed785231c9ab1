import { Command, Option } from 'commander';
import type { InteractiveChatOptions } from './chat/index.js';
import type { OneShotOptions, OutputFormat } from './commands/oneshot.js';
import { VERSION } from './version.js';

/**
 * Subcommand modules, loaded only when their subcommand runs (or for help): `hermes acp` must not
 * pay for the HTTP server's imports, nor `hermes --version` for any of them.
 */
const SUBCOMMANDS: Record<string, (program: Command) => Promise<void>> = {
  acp: async (program) => withExamples(program, 'acp', (await import('./commands/acp.js')).registerAcpCommand),
  gateway: async (program) =>
    withExamples(program, 'gateway', (await import('./commands/gateway.js')).registerGatewayCommand),
  serve: async (program) => withExamples(program, 'serve', (await import('./commands/serve.js')).registerServeCommand),
  sessions: async (program) => (await import('./commands/sessions.js')).registerSessionsCommand(program),
  config: async (program) => (await import('./commands/config.js')).registerConfigCommand(program),
  model: async (program) => (await import('./commands/model.js')).registerModelCommand(program),
};

interface RootOptions {
  query?: string;
  model?: string;
  resume?: string;
  continue?: boolean;
  yolo?: boolean;
  outputFormat?: OutputFormat;
}

/** Reads all of a piped stdin. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Examples shown under the help of the protocol subcommands. */
const EXAMPLES: Record<string, string> = {
  acp: `
Examples:
  $ hermes acp                      run as the agent of an ACP editor (configure the editor to start this)
  $ hermes acp --check              check the installation and configuration, exit 0 or 1
  $ hermes acp --setup              choose a provider and model interactively
  Zed settings.json: "agent_servers": { "Hermes": { "command": "hermes", "args": ["acp"] } }`,
  gateway: `
Examples:
  $ hermes gateway                          JSON-RPC on stdin/stdout for a host that spawns it
  $ hermes gateway --ws --port 9119         WebSocket at ws://127.0.0.1:9119/api/ws?token=… (token on stderr)
  $ HERMES_GATEWAY_TOKEN=… hermes gateway --ws   use a fixed token`,
  serve: `
Examples:
  $ API_SERVER_KEY=$(openssl rand -hex 32) hermes serve         http://127.0.0.1:8642/v1
  $ hermes serve --host 0.0.0.0 --port 9000                     needs API_SERVER_KEY
  $ curl http://127.0.0.1:8642/v1/models -H "Authorization: Bearer $API_SERVER_KEY"`,
};

/** Registers a subcommand and appends its examples to its help. */
function withExamples(program: Command, name: string, register: (program: Command) => void): void {
  register(program);
  const examples = EXAMPLES[name];
  if (examples) program.commands.find((command) => command.name() === name)?.addHelpText('after', examples);
}

/** Registers every subcommand, for help and for commander's unknown-command message. */
async function loadAllSubcommands(program: Command): Promise<void> {
  for (const load of Object.values(SUBCOMMANDS)) await load(program);
}

/**
 * Builds the `hermes` command tree. Each subcommand lives in its own module under `commands/`.
 * Stdio protocol modes keep stdout for frames only: help and errors go to stderr there.
 */
export async function createProgram(argv: readonly string[] = process.argv): Promise<Command> {
  const program = new Command('hermes')
    .description('Hermes: one agent core driven from IDEs (ACP), custom hosts (TUI gateway) and HTTP.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', 'show help')
    .showHelpAfterError('(run `hermes --help` for usage)')
    .option('-q, --query <text>', 'run one prompt and print the answer ("-" reads the prompt from stdin)')
    .option('-m, --model <spec>', 'model for a new session, e.g. anthropic:claude-sonnet-4-5')
    .option('--resume <idOrTitle>', 'continue a stored session')
    .option('-c, --continue', 'continue the most recent session')
    .option('--yolo', 'approve dangerous commands without asking (the hard blocklist still applies)')
    .addOption(
      new Option('--output-format <format>', 'what -q prints on stdout: the answer, one JSON result, or JSON per event')
        .choices(['text', 'json', 'stream-json'])
        .default('text'),
    )
    .addHelpText(
      'after',
      `
Without -q, on a terminal, hermes starts an interactive chat: answers rendered as Markdown,
tool calls and highlighted diffs, inline approvals, slash commands (/help, Tab completes),
Shift-Tab switches the approval mode, Ctrl-C interrupts a turn. With text piped in and no -q,
hermes answers that text as with -q -.

Examples:
  $ hermes                                 interactive chat in this directory
  $ hermes --continue                      interactive chat in the most recent session
  $ hermes --resume "release notes"        interactive chat in a stored session (id or title)
  $ hermes -q "Summarize README.md"        one-shot: answer on stdout, progress on stderr
  $ git diff | hermes -q -                 read the prompt from stdin
  $ echo "Summarize README.md" | hermes    piped stdin without -q is the prompt
  $ hermes -q "hi" --output-format stream-json   one JSON object per event (schema in the README)
  $ hermes -q "Clean the build" --yolo     run dangerous commands without asking
  $ hermes --continue -q "And the tests?"  follow up in the last session
  $ hermes acp                             serve the Agent Client Protocol on stdio (Zed, VS Code, JetBrains)
  $ hermes gateway                         serve the TUI gateway on stdio
  $ hermes serve --port 8642               serve the OpenAI-compatible HTTP API
  $ hermes sessions list                   stored sessions
  $ hermes model set openrouter:anthropic/claude-sonnet-4.5

Configuration lives in HERMES_HOME (default ~/.hermes): config.yaml and .env.
With no model configured set HERMES_MODEL and the provider's key, for example
  HERMES_MODEL=anthropic:claude-sonnet-4-5 ANTHROPIC_API_KEY=… hermes -q "hi"
or any OpenAI-compatible endpoint:
  HERMES_BASE_URL=http://127.0.0.1:11434/v1 HERMES_MODEL=qwen2.5-coder hermes -q "hi"`,
    )
    .action(async (options: RootOptions) => {
      let stdinText: string | undefined;
      if (options.query === undefined && !process.stdin.isTTY) {
        // `echo text | hermes` asks that text, as `hermes -q -` does; nothing piped shows the help.
        stdinText = await readStdin();
        if (stdinText.trim() === '') {
          await loadAllSubcommands(program);
          program.outputHelp();
          return;
        }
      }
      if (options.query === undefined && stdinText === undefined) {
        const chat: InteractiveChatOptions = {};
        if (options.model) chat.model = options.model;
        if (options.resume) chat.resume = options.resume;
        if (options.continue) chat.continue = true;
        if (options.yolo) chat.yolo = true;
        const { runInteractiveChat } = await import('./chat/index.js');
        process.exitCode = await runInteractiveChat(chat);
        return;
      }
      const oneShot: OneShotOptions = { query: stdinText === undefined ? (options.query ?? '-') : '-' };
      if (stdinText !== undefined) oneShot.stdinText = stdinText;
      if (options.outputFormat) oneShot.outputFormat = options.outputFormat;
      if (options.model) oneShot.model = options.model;
      if (options.resume) oneShot.resume = options.resume;
      if (options.continue) oneShot.continue = true;
      if (options.yolo) oneShot.yolo = true;
      const { runOneShot } = await import('./commands/oneshot.js');
      process.exitCode = await runOneShot(oneShot);
    });
  const requested = argv[2];
  if (requested !== undefined && requested in SUBCOMMANDS) await SUBCOMMANDS[requested]?.(program);
  else if (argv.includes('-h') || argv.includes('--help') || (requested !== undefined && !requested.startsWith('-')))
    await loadAllSubcommands(program);
  return program;
}
