import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hang, reasoning, step, text, toolCall } from '@hermes/core/testing';
import { describe, expect, it } from 'vitest';
import { bin, useChatHarness } from './fixtures/chat/harness.js';
import { PtySession } from './fixtures/chat/pty.js';

const { cleanups, temp, server } = useChatHarness();

function newHome(): string {
  const home = temp('hermes-home-');
  // No automatic titles: each scripted step answers exactly one turn.
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  return home;
}

function modelEnv(baseURL: string, home = newHome()): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    TERM: 'xterm-256color',
    HERMES_HOME: home,
    HERMES_MODEL: 'custom:scripted',
    HERMES_BASE_URL: baseURL,
  };
}

function chat(args: string[], env: Record<string, string>, cwd: string): PtySession {
  const session = new PtySession([process.execPath, bin, ...args], { cwd, env });
  cleanups.push(() => session.dispose());
  return session;
}

const READY = 'Ctrl-D or /exit quits.';

/** Session ids shown on status lines so far (the title replaces the id once one is set). */
function readSessionIds(session: PtySession): string[] {
  return [...session.text.matchAll(/─ custom:scripted · (\d{8}_\d{6}_\w+)/g)].map((match) => match[1] ?? '');
}

describe('hermes interactive chat (on a pseudo-terminal)', () => {
  it('streams the answer, shows reasoning and a status line, runs slash commands and exits on /exit', async () => {
    const scripted = await server([step(reasoning('Let me think.'), text('The capital of France is Paris.', 4))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('What is the capital of France?\r');
    await session.waitFor('Let me think.');
    await session.waitFor('The capital of France is Paris.');
    await session.waitFor(/custom:scripted · .+ in \/ .+ out/);
    session.type('/title Geography\r');
    await session.waitFor('Title set to "Geography".');
    // Tab completes the command name from the shared registry.
    session.type('/usa\t');
    await session.waitFor('/usage');
    session.type('\r');
    await session.waitFor(/Input tokens: [1-9]\d*/);
    await session.waitFor(/API calls: 1/);
    const firstSession = readSessionIds(session).at(-1);
    session.type('/new\r');
    await session.waitFor('Started a new session.');
    const status = await session.waitFor(/─ custom:scripted · \S+/);
    expect(status).not.toContain(firstSession ?? 'missing');
    session.type('/exit\r');
    const exit = await session.exited;
    expect(exit.code).toBe(0);
    expect(scripted.calls).toHaveLength(1);
    // NO_COLOR: no SGR sequence anywhere (readline's cursor moves are not colors).
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for escape sequences.
    expect(session.raw).not.toMatch(/\x1b\[[0-9;]*m/);
  });

  it('asks for approval inline, runs the approved command, and shows a colored diff of a file edit', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([
      step(toolCall('terminal', { command: 'rm -rf build' })),
      step(toolCall('write_file', { path: 'notes.txt', content: 'cleaned\n' })),
      step(text('Build removed and noted.')),
    ]);
    const session = chat([], modelEnv(scripted.baseURL), cwd);
    await session.waitFor(READY);
    session.type('clean the build\r');
    await session.waitFor('Approval needed');
    await session.waitFor('$ rm -rf build');
    await session.waitFor('Run it?');
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    session.type('o\r');
    await session.waitFor('approved (once)');
    await session.waitFor(/✓ terminal/);
    await session.waitFor('+cleaned');
    await session.waitFor('Build removed and noted.');
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('cleaned\n');
    // On a terminal without NO_COLOR the added line is green.
    expect(session.raw).toContain('\x1b[32m+cleaned');
    session.type('\x04');
    expect((await session.exited).code).toBe(0);
  });

  it('denies a dangerous command when the answer is deny', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([
      step(toolCall('terminal', { command: 'rm -rf build' })),
      step(text('I was not allowed to delete it.')),
    ]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor(READY);
    session.type('clean the build\r');
    await session.waitFor('Run it?');
    session.type('d\r');
    await session.waitFor('denied');
    await session.waitFor('I was not allowed to delete it.');
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('Ctrl-C interrupts a hanging turn, the prompt comes back, and Ctrl-C while idle exits', async () => {
    const scripted = await server([step(text('Working on it'), hang()), step(text('Still here.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('take your time\r');
    await session.waitFor('Working on it');
    session.type('\x03');
    await session.waitFor('Interrupted (Ctrl-C): the turn was cancelled.');
    await session.waitFor('› ');
    expect(scripted.calls[0]?.aborted).toBe(true);
    session.type('are you there?\r');
    await session.waitFor('Still here.');
    await session.waitFor('› ');
    session.type('\x03');
    const exit = await session.exited;
    expect(exit.code).toBe(0);
  });

  it('a second Ctrl-C during a turn exits', async () => {
    const scripted = await server([step(text('Working on it'), hang())]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('take your time\r');
    await session.waitFor('Working on it');
    session.type('\x03\x03');
    const exit = await session.exited;
    expect(exit.code).toBe(0);
    expect(scripted.calls[0]?.aborted).toBe(true);
  });

  it('queues text typed with /queue during a turn and sends it when the turn ends; idle it sends at once', async () => {
    const scripted = await server([
      step(text('First answer.'), { delayMs: 1500 }, text(' Done.')),
      step(text('Second answer.')),
      step(text('Third answer.')),
    ]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('first\r');
    await session.waitFor('First answer.');
    session.type('/queue second\r');
    await session.waitFor('queued for after this turn: second');
    await session.waitFor('Second answer.');
    expect(JSON.stringify(scripted.calls[1]?.messages)).toContain('second');
    // Idle, /queue sends at once.
    await session.waitFor('› ');
    session.type('/queue third\r');
    await session.waitFor('Third answer.');
    expect(JSON.stringify(scripted.calls[2]?.messages)).toContain('third');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('--continue reopens the last session and --resume finds one by title', async () => {
    const scripted = await server([step(text('Noted: blue.')), step(text('You said blue.')), step(text('Blue.'))]);
    const home = newHome();
    const env = { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' };
    const cwd = temp('hermes-ws-');
    const first = chat([], env, cwd);
    await first.waitFor(READY);
    first.type('My favourite colour is blue.\r');
    await first.waitFor('Noted: blue.');
    first.type('/title Colours\r');
    await first.waitFor('Title set to "Colours".');
    first.type('/exit\r');
    expect((await first.exited).code).toBe(0);

    const second = chat(['--continue'], env, cwd);
    await second.waitFor(READY);
    await second.waitFor('Resumed "Colours"');
    await second.waitFor('you: My favourite colour is blue.');
    await second.waitFor('hermes: Noted: blue.');
    second.type('What did I say?\r');
    await second.waitFor('You said blue.');
    expect(JSON.stringify(scripted.calls[1]?.messages)).toContain('My favourite colour is blue.');
    second.type('/exit\r');
    expect((await second.exited).code).toBe(0);

    const third = chat(['--resume', 'Colours'], env, cwd);
    await third.waitFor(READY);
    await third.waitFor('Resumed "Colours"');
    third.type('Again?\r');
    await third.waitFor('Blue.');
    expect(JSON.stringify(scripted.calls[2]?.messages)).toContain('What did I say?');
    third.type('/exit\r');
    expect((await third.exited).code).toBe(0);
  });

  it('answers a clarify question by number', async () => {
    const scripted = await server([
      step(toolCall('clarify', { question: 'Which flavour?', choices: ['vanilla', 'chocolate'] })),
      step(text('Chocolate it is.')),
    ]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('pick one\r');
    await session.waitFor('Which flavour?');
    await session.waitFor('2. chocolate');
    await session.waitFor('answer');
    session.type('2\r');
    await session.waitFor('Chocolate it is.');
    expect(JSON.stringify(scripted.calls[1]?.messages)).toContain('chocolate');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });
});

describe('hermes next to other terminal agents (issue 19.5, on a pseudo-terminal)', () => {
  it('Ctrl-C with text on the prompt clears the line; Ctrl-C on the empty line quits', async () => {
    const scripted = await server([step(text('Got the real question.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('a draft I regret');
    await session.waitFor('a draft I regret');
    session.type('\x03');
    session.type('the real question\r');
    await session.waitFor('Got the real question.');
    // The cleared draft never reached the model.
    const sent = JSON.stringify(scripted.calls[0]?.messages);
    expect(sent).toContain('the real question');
    expect(sent).not.toContain('draft');
    await session.waitFor('› ');
    session.type('\x03');
    expect((await session.exited).code).toBe(0);
  });

  it('an approval is answered with one key, without Enter', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Removed.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor(READY);
    session.type('clean the build\r');
    await session.waitFor('Run it?');
    session.type('o');
    await session.waitFor('approved (once)');
    await session.waitFor('Removed.');
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('/help renders its Markdown: bullets and command names, no backticks', async () => {
    const scripted = await server([]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('/help\r');
    await session.waitFor('Commands:');
    const help = await session.waitFor(/• \/help: List the commands\./);
    expect(help).not.toContain('`');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
    const shown = session.text.slice(session.text.indexOf('Commands:'));
    expect(shown).toMatch(/• \/model/);
    expect(shown).not.toContain('`');
  });

  it('/resume shows a recap of the session it switches to', async () => {
    const scripted = await server([step(text('Noted: green.')), step(text('Hello again.'))]);
    const home = newHome();
    const env = { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' };
    const cwd = temp('hermes-ws-');
    const first = chat([], env, cwd);
    await first.waitFor(READY);
    first.type('My favourite colour is green.\r');
    await first.waitFor('Noted: green.');
    first.type('/title Greens\r');
    await first.waitFor('Title set to "Greens".');
    first.type('/exit\r');
    expect((await first.exited).code).toBe(0);

    const second = chat([], env, cwd);
    await second.waitFor(READY);
    second.type('/resume Greens\r');
    await second.waitFor('Resumed');
    await second.waitFor('you: My favourite colour is green.');
    await second.waitFor('hermes: Noted: green.');
    await second.waitFor(/─ custom:scripted · Greens/);
    second.type('/exit\r');
    expect((await second.exited).code).toBe(0);
  });

  it('-q at a terminal asks for approval (one key) and runs the approved command', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Deleted.'))]);
    const session = chat(['-q', 'clean the build'], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor('Approval needed');
    await session.waitFor('$ rm -rf build');
    await session.waitFor('Run it?');
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    session.type('o');
    await session.waitFor('approved (once)');
    await session.waitFor('Deleted.');
    expect((await session.exited).code).toBe(0);
    expect(existsSync(join(cwd, 'build'))).toBe(false);
  });

  it('-q: [a]lways says it allows exactly this command; a later run still asks for another folder; /permissions lists and revokes', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    mkdirSync(join(cwd, 'src'));
    const home = newHome();
    const first = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Deleted.'))]);
    const always = chat(['-q', 'clean the build'], { ...modelEnv(first.baseURL, home), NO_COLOR: '1' }, cwd);
    await always.waitFor('[a]lways = always allow `rm -rf build` (this exact command');
    await always.waitFor('Run it?');
    always.type('a');
    await always.waitFor('approved (always)');
    await always.waitFor('Deleted.');
    expect((await always.exited).code).toBe(0);
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toContain('- command: rm -rf build');

    const second = await server([step(toolCall('terminal', { command: 'rm -rf src' })), step(text('Kept it.'))]);
    const other = chat(['-q', 'clean the sources'], { ...modelEnv(second.baseURL, home), NO_COLOR: '1' }, cwd);
    await other.waitFor('$ rm -rf src');
    await other.waitFor('Run it?');
    other.type('\r');
    await other.waitFor('denied');
    await other.waitFor('Kept it.');
    expect((await other.exited).code).toBe(0);
    expect(existsSync(join(cwd, 'src'))).toBe(true);

    const third = await server([]);
    const listing = chat([], { ...modelEnv(third.baseURL, home), NO_COLOR: '1' }, cwd);
    await listing.waitFor(READY);
    listing.type('/permissions\r');
    // The chat renders the Markdown: the backticks become styling.
    await listing.waitFor('1. always allow rm -rf build');
    listing.type('/permissions revoke 1\r');
    await listing.waitFor('Revoked: always allow rm -rf build.');
    listing.type('/exit\r');
    expect((await listing.exited).code).toBe(0);
    expect(readFileSync(join(home, 'config.yaml'), 'utf8')).not.toContain('rm -rf build');
  });

  it('-q at a terminal denies on Enter', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Kept it.'))]);
    const session = chat(['-q', 'clean the build'], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor('Run it?');
    session.type('\r');
    await session.waitFor('denied');
    await session.waitFor('Kept it.');
    expect((await session.exited).code).toBe(0);
    expect(existsSync(join(cwd, 'build'))).toBe(true);
  });
});

describe('hermes without -q', () => {
  it('prints help mentioning the interactive chat when stdin is not a terminal', () => {
    const result = spawnSync(process.execPath, [bin], { input: '', encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('interactive chat');
  });
});
