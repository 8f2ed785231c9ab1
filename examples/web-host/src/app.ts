/**
 * A small chat page on @hermes/client-sdk's browser entry (resolved through the `browser` export condition): it
 * trades the API key for a gateway ticket, lists sessions, streams turns with their tool calls and diffs, answers
 * approvals with buttons, and starts a run through the runs API. `window.webHost` exposes what it saw, for its test.
 */
import { type AnyGatewayEvent, type ApprovalChoice, GatewayClient, RunsClient } from '@hermes/client-sdk';

/** What the page saw, for a test or a curious developer in the console. */
interface WebHostState {
  state: string;
  /** Every session event delivered, in delivery order. */
  events: { session_id: string; seq: number | undefined; type: string }[];
  reconnects: number;
  /** Events the replay ring delivered after reconnects: those emitted while the page was cut off. */
  replayed: number;
  resyncs: number;
  sessionId: string | undefined;
  errors: string[];
}

const page: WebHostState = {
  state: 'disconnected',
  events: [],
  reconnects: 0,
  replayed: 0,
  resyncs: 0,
  sessionId: undefined,
  errors: [],
};
(window as unknown as { webHost: WebHostState }).webHost = page;

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing`);
  return found as T;
}

function add(parent: HTMLElement, tag: string, className: string, text = ''): HTMLElement {
  const child = document.createElement(tag);
  child.className = className;
  child.textContent = text;
  parent.append(child);
  return child;
}

const transcript = element<HTMLDivElement>('transcript');
let client: GatewayClient | undefined;
let runs: RunsClient | undefined;
let assistant: HTMLElement | undefined;
const tools = new Map<string, HTMLElement>();

function render(event: AnyGatewayEvent): void {
  if (event.session_id !== page.sessionId) return;
  page.events.push({ session_id: event.session_id, seq: event.seq, type: event.type });
  const payload = event.payload as Record<string, unknown>;
  switch (event.type) {
    case 'message.start':
      assistant = add(transcript, 'div', 'assistant');
      break;
    case 'message.delta':
      assistant ??= add(transcript, 'div', 'assistant');
      assistant.textContent += String(payload.text ?? '');
      break;
    case 'tool.start': {
      const box = add(transcript, 'div', 'tool');
      box.dataset.name = String(payload.name);
      add(box, 'div', 'tool-name', `${String(payload.name)} ${String(payload.context ?? '')}`);
      tools.set(String(payload.tool_id), box);
      break;
    }
    case 'tool.complete': {
      const box = tools.get(String(payload.tool_id)) ?? add(transcript, 'div', 'tool');
      box.dataset.done = 'true';
      if (typeof payload.inline_diff === 'string') add(box, 'pre', 'diff', payload.inline_diff);
      break;
    }
    case 'message.complete':
      if (assistant) assistant.dataset.status = String(payload.status);
      assistant = undefined;
      // A finished turn is stored: show it in the list.
      refreshSessions().catch((error: unknown) => page.errors.push(String(error)));
      break;
  }
}

/** Shows an approval card and resolves with the button pressed. */
function askApproval(command: string, description: string): Promise<ApprovalChoice> {
  return new Promise((resolve) => {
    const card = add(transcript, 'div', 'approval');
    add(card, 'div', 'approval-command', command);
    add(card, 'div', 'approval-description', description);
    const answer = (choice: ApprovalChoice) => {
      card.dataset.answered = choice;
      for (const button of card.querySelectorAll('button')) button.disabled = true;
      resolve(choice);
    };
    add(card, 'button', 'approve', 'Approve').addEventListener('click', () => answer('once'));
    add(card, 'button', 'deny', 'Deny').addEventListener('click', () => answer('deny'));
  });
}

async function refreshSessions(): Promise<void> {
  if (!client) return;
  const list = element<HTMLUListElement>('sessions');
  const { sessions } = await client.session.list({ limit: 20 });
  list.replaceChildren();
  for (const session of sessions) {
    const item = add(list, 'li', 'session', session.title || session.preview || session.id);
    item.dataset.id = session.id;
    item.addEventListener('click', () => void openStored(session.id));
  }
}

async function openStored(storedId: string): Promise<void> {
  if (!client) return;
  const snapshot = await client.session.resume({ session_id: storedId });
  page.sessionId = snapshot.session_id;
  transcript.replaceChildren();
  for (const message of snapshot.messages ?? []) add(transcript, 'div', message.role, message.text ?? '');
}

function enable(on: boolean): void {
  for (const id of ['new-session', 'prompt', 'send', 'run-input', 'run'])
    element<HTMLInputElement | HTMLButtonElement>(id).disabled = !on;
}

async function connect(server: string, apiKey: string): Promise<void> {
  await client?.close();
  const url = new URL('/api/ws', server);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  client = new GatewayClient({
    // The key buys a single-use ticket before each (re)connect; it never appears in the socket's URL.
    connection: { url: url.toString(), apiKey },
    handlers: {
      approval: async (request) => ({ choice: await askApproval(request.command, request.description) }),
    },
    reconnect: { initialDelayMs: 250, maxDelayMs: 1000 },
    onStateChange: (state) => {
      page.state = state;
      element('state').textContent = state;
    },
    onReconnect: (report) => {
      page.reconnects += 1;
      for (const session of report.sessions) page.replayed += session.replayedEvents;
    },
    onResync: () => {
      page.resyncs += 1;
    },
    onProtocolError: (error) => page.errors.push(error.message),
  });
  client.on('*', render);
  runs = new RunsClient({ baseURL: server, apiKey });
  await client.connect();
  enable(true);
  await refreshSessions();
}

element<HTMLFormElement>('connect-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const server = element<HTMLInputElement>('server').value;
  const key = element<HTMLInputElement>('key').value;
  connect(server, key).catch((error: unknown) => {
    page.errors.push(String(error));
    element('state').textContent = `failed: ${String(error)}`;
  });
});

element('new-session').addEventListener('click', () => {
  if (!client) return;
  void client.session.create({}).then(async (created) => {
    page.sessionId = created.session_id;
    transcript.replaceChildren();
    await refreshSessions();
  });
});

element<HTMLFormElement>('prompt-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = element<HTMLInputElement>('prompt');
  const text = input.value;
  if (!client || !page.sessionId || !text) return;
  input.value = '';
  add(transcript, 'div', 'user', text);
  client.prompt.submit({ session_id: page.sessionId, text }).catch((error: unknown) => page.errors.push(String(error)));
});

element<HTMLFormElement>('run-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = element<HTMLInputElement>('run-input').value;
  const output = element<HTMLPreElement>('run-output');
  if (!runs || !input) return;
  const client = runs;
  output.textContent = '';
  void (async () => {
    const run = await client.create({ input });
    output.dataset.runId = run.run_id;
    for await (const item of client.events(run.run_id)) {
      if (item.event === 'message.delta') output.textContent += String((item as { delta?: unknown }).delta ?? '');
      if (item.event.startsWith('run.') && item.event !== 'run.steered') output.dataset.status = item.event;
    }
  })().catch((error: unknown) => {
    output.dataset.status = 'error';
    page.errors.push(String(error));
  });
});
