/**
 * A desktop host built on @hermes/client-sdk, as a desktop app would use it: start (or attach to) a
 * gateway, create a session, stream a turn while answering its approval, send a second turn, rewind
 * that turn (edit and resend), and list the stored sessions.
 *
 * Run: `node dist/main.js` with `hermes` on PATH (or HERMES_GATEWAY_COMMAND), or attach to a running
 * server with HERMES_GATEWAY_URL (and HERMES_GATEWAY_TOKEN).
 */
import { createInterface } from 'node:readline/promises';
import { pathToFileURL } from 'node:url';
import {
  type ApprovalChoice,
  type GatewayClient as Client,
  GatewayClient,
  type GatewayConnectionOptions,
  type GatewayMethodParams,
} from '@hermes/client-sdk';

/** Options of {@link runDesktopHost}. */
export interface DesktopHostOptions {
  /** Spawn (`{ command, args }`) or attach (`{ url, token }`). */
  connection: GatewayConnectionOptions;
  /** The first prompt; its turn may ask for approvals. */
  prompt?: string;
  /** The second prompt, which is then rewound. */
  followUp?: string;
  /** The text that replaces the second prompt. */
  edited?: string;
  /** Decides an approval; default: approve once. */
  decide?: (command: string) => ApprovalChoice | Promise<ApprovalChoice>;
  /** Where the host's transcript goes; default stdout. */
  print?: (text: string) => void;
  /** The session's workspace: the folder its commands may change (the command sandbox allows nothing else). */
  cwd?: string;
}

/** What the host did, for the caller (and the test) to inspect. */
export interface DesktopHostReport {
  storedSessionId: string;
  replies: string[];
  approvals: { command: string; choice: ApprovalChoice }[];
  /** New row ids of the user turns that survived the rewind. */
  survivorUserRowIds: (number | null)[];
  /** The display projection after the rewind. */
  transcript: { role: string; text: string | undefined }[];
  /** Stored sessions, most recently active first. */
  sessions: { id: string; title: string; preview: string }[];
}

/** Streams one turn to `print` and returns its final text. */
async function streamTurn(
  client: Client,
  params: GatewayMethodParams<'prompt.submit'>,
  print: (text: string) => void,
): Promise<{ text: string; result: Awaited<ReturnType<Client['startTurn']>>['result'] }> {
  const turn = await client.startTurn(params);
  for await (const event of turn.events) {
    switch (event.type) {
      case 'message.start':
        print(`\n> ${event.payload.input?.text ?? ''}\n`);
        break;
      case 'message.delta':
        print(event.payload.text);
        break;
      case 'tool.start':
        print(`\n[tool ${event.payload.name}${event.payload.context ? `: ${event.payload.context}` : ''}]\n`);
        break;
      case 'tool.complete':
        print(`[tool ${event.payload.name} done]\n`);
        break;
    }
  }
  const complete = await turn.completed;
  print(`\n[${complete.status}]\n`);
  return { text: complete.text, result: turn.result };
}

/** Runs the whole desktop-host scenario once and closes the connection. */
export async function runDesktopHost(options: DesktopHostOptions): Promise<DesktopHostReport> {
  const print = options.print ?? ((text: string) => process.stdout.write(text));
  const decide = options.decide ?? (() => 'once' as const);
  const approvals: DesktopHostReport['approvals'] = [];
  const client = await GatewayClient.connect({
    connection: options.connection,
    handlers: {
      // A desktop app shows a card here; clarify, sudo and secret are declined (no handler).
      approval: async (request) => {
        print(`\n[approval requested] ${request.command}\n`);
        const choice = await decide(request.command);
        approvals.push({ command: request.command, choice });
        return { choice };
      },
    },
  });
  // A dropped connection is repaired by the SDK; a real app would refresh its view here.
  client.onReconnect((report) => print(`\n[reconnected: ${report.sessions.length} session(s) re-attached]\n`));
  try {
    const session = await client.session.create(options.cwd ? { cwd: options.cwd } : {});
    const sessionId = session.session_id;
    const first = await streamTurn(
      client,
      { session_id: sessionId, text: options.prompt ?? 'Tidy the build folder.' },
      print,
    );
    const second = await streamTurn(
      client,
      { session_id: sessionId, text: options.followUp ?? 'Now summarise.' },
      print,
    );

    // Rewind: cut before the last user turn and send the edited text in its place (spec §7).
    const history = await client.session.history({ session_id: sessionId });
    const lastUser = history.messages.filter((message) => message.role === 'user' && !message.display_kind).at(-1);
    if (lastUser?.row_id == null) throw new Error('the last user turn has no row id yet');
    const rewound = await streamTurn(
      client,
      {
        session_id: sessionId,
        text: options.edited ?? 'Summarise in one line.',
        truncate_before_row_id: lastUser.row_id,
        confirm_truncate: true,
      },
      print,
    );
    const after = await client.session.history({ session_id: sessionId });
    const listed = await client.session.list({ limit: 20 });
    print(
      `\nsessions:\n${listed.sessions.map((entry) => `  ${entry.id}  ${entry.title || entry.preview}`).join('\n')}\n`,
    );
    return {
      storedSessionId: session.stored_session_id,
      replies: [first.text, second.text, rewound.text],
      approvals,
      survivorUserRowIds: rewound.result.survivor_user_row_ids ?? [],
      transcript: after.messages.map((message) => ({ role: message.role, text: message.text })),
      sessions: listed.sessions.map(({ id, title, preview }) => ({ id, title, preview })),
    };
  } finally {
    await client.close();
  }
}

/** The connection from the environment: attach when HERMES_GATEWAY_URL is set, else spawn `hermes gateway`. */
export function connectionFromEnvironment(environment: NodeJS.ProcessEnv = process.env): GatewayConnectionOptions {
  if (environment.HERMES_GATEWAY_URL) {
    return {
      url: environment.HERMES_GATEWAY_URL,
      ...(environment.HERMES_GATEWAY_TOKEN ? { token: environment.HERMES_GATEWAY_TOKEN } : {}),
    };
  }
  return {
    command: environment.HERMES_GATEWAY_COMMAND ?? 'hermes',
    args: ['gateway'],
    onStderr: (text) => process.stderr.write(text),
  };
}

async function main(): Promise<void> {
  // On a terminal the user decides each approval; otherwise (CI, pipes) approve once and say so.
  const terminal = process.stdin.isTTY ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;
  try {
    await runDesktopHost({
      connection: connectionFromEnvironment(),
      ...(process.argv[2] ? { prompt: process.argv[2] } : {}),
      decide: async (command) => {
        if (!terminal) return 'once';
        const answer = (await terminal.question(`Run "${command}"? [o]nce / [s]ession / [d]eny: `)).trim();
        return answer.startsWith('s') ? 'session' : answer.startsWith('d') ? 'deny' : 'once';
      },
    });
  } finally {
    terminal?.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
