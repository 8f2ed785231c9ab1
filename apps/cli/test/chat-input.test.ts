import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { step, text, toolCall } from '@hermes/core/testing';
import { describe, expect, it } from 'vitest';
import { bin, useChatHarness } from './fixtures/chat/harness.js';
import { PtySession } from './fixtures/chat/pty.js';

const { cleanups, temp, server } = useChatHarness();

function newHome(): string {
  const home = temp('hermes-home-');
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  return home;
}

function modelEnv(baseURL: string | null, home = newHome()): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    TERM: 'xterm-256color',
    HERMES_HOME: home,
    ...(baseURL === null ? {} : { HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: baseURL }),
  };
}

function chat(args: string[], env: Record<string, string>, cwd: string): PtySession {
  const session = new PtySession([process.execPath, bin, ...args], { cwd, env });
  cleanups.push(() => session.dispose());
  return session;
}

const READY = 'Shift-Tab switches the approval mode.';
const FENCE = '```';

/** The user message the scripted model received in call `index`. */
function sentText(scripted: { calls: { messages: unknown }[] }, index: number): string {
  const messages = scripted.calls[index]?.messages as { role: string; content: unknown }[];
  const user = messages.findLast((message) => message.role === 'user');
  return typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content);
}

describe('answers rendered as Markdown (on a pseudo-terminal)', () => {
  it('renders headings, emphasis, lists and code, highlighted in colors; the Markdown syntax is gone', async () => {
    const answer = [
      '## Result',
      '',
      'The **fix** is in `main.ts`:',
      '',
      '- first item',
      '- second item',
      '',
      `${FENCE}ts`,
      'const total = 42;',
      FENCE,
      '',
      'Done.',
    ].join('\n');
    const scripted = await server([step(text(answer, 3))]);
    const session = chat([], modelEnv(scripted.baseURL), temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('fix it\r');
    await session.waitFor('Done.');
    await session.waitFor('─ custom:scripted');
    const shown = session.text.slice(session.text.indexOf('fix it'));
    expect(shown).toContain('Result');
    expect(shown).toContain('The fix is in main.ts:');
    expect(shown).toContain('• first item');
    expect(shown).toContain('    const total = 42;');
    expect(shown).not.toContain('**');
    expect(shown).not.toContain(FENCE);
    // Bold, and `const` highlighted as a keyword (magenta) with the number in cyan.
    expect(session.raw).toContain('\x1b[1mfix\x1b[22m');
    expect(session.raw).toContain('\x1b[35mconst\x1b[39m total = \x1b[36m42\x1b[39m;');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('with NO_COLOR the layout is kept and no color code is written', async () => {
    const scripted = await server([step(text('Use **bold** and `code`.\n\n1. one\n2. two', 4))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('go\r');
    await session.waitFor('2. two');
    const shown = session.raw.slice(session.raw.indexOf('go\r'));
    expect(session.text).toContain('Use bold and code.');
    // No foreground color (SGR 30-39, 90-97) and no bold.
    for (const code of [31, 32, 33, 34, 35, 36, 90, 1]) expect(shown).not.toContain(`\x1b[${code}m`);
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });
});

describe('input (on a pseudo-terminal)', () => {
  it('a bracketed paste of two lines is one message; a trailing backslash and Alt-Enter add lines', async () => {
    const scripted = await server([step(text('Got the paste.')), step(text('Got three lines.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('\x1b[200~first pasted line\rsecond pasted line\x1b[201~');
    await session.waitFor('second pasted line');
    session.type('\r');
    await session.waitFor('Got the paste.');
    expect(scripted.calls).toHaveLength(1);
    expect(sentText(scripted, 0)).toBe('first pasted line\nsecond pasted line');
    await session.waitFor('› ');
    session.type('line one \\\r');
    await session.waitFor('… ');
    session.type('line two\x1b\r');
    session.type('line three\r');
    await session.waitFor('Got three lines.');
    expect(sentText(scripted, 1)).toBe('line one \nline two\nline three');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('/edit sends what the editor wrote', async () => {
    const cwd = temp('hermes-ws-');
    const editor = join(temp('hermes-editor-'), 'editor.sh');
    writeFileSync(editor, '#!/bin/sh\nprintf \'from the editor\\nsecond line\\n\' > "$1"\n', { mode: 0o755 });
    const scripted = await server([step(text('Edited message received.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1', EDITOR: editor }, cwd);
    await session.waitFor(READY);
    session.type('/edit\r');
    await session.waitFor('Edited message received.');
    expect(sentText(scripted, 0)).toBe('from the editor\nsecond line');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('keeps the history per project across runs and Ctrl-R picks an entry from it', async () => {
    const scripted = await server([step(text('First.')), step(text('Again.'))]);
    const home = newHome();
    const cwd = temp('hermes-ws-');
    const first = chat([], { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' }, cwd);
    await first.waitFor(READY);
    first.type('remember the zebra\r');
    await first.waitFor('First.');
    first.type('/exit\r');
    expect((await first.exited).code).toBe(0);
    const files = readdirSync(join(home, 'history'));
    expect(files).toHaveLength(1);
    expect(readFileSync(join(home, 'history', files[0] ?? ''), 'utf8')).toContain('"remember the zebra"');

    const second = chat([], { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' }, cwd);
    await second.waitFor(READY);
    second.type('\x12');
    await second.waitFor('History');
    second.type('zeb');
    // The filter applies asynchronously: Enter counts once the filtered list is drawn.
    await second.waitFor(/❯ remember the zebra\s*\n\s*\n/);
    second.type('\r');
    // The picked entry is back on the chat's own input line, ready to edit or send.
    await second.waitFor('› remember the zebra');
    second.type('\r');
    await second.waitFor('Again.');
    expect(sentText(scripted, 1)).toBe('remember the zebra');
    second.type('/exit\r');
    expect((await second.exited).code).toBe(0);
  });

  it('@path completes with Tab and attaches the file to the message', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'src'));
    writeFileSync(join(cwd, 'src', 'settings.json'), '{ "answer": 42 }\n');
    const scripted = await server([step(text('It is 42.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor(READY);
    session.type('what is in @sr\t');
    await session.waitFor('@src/');
    session.type('set\t');
    // readline writes only the completed rest of the word.
    await session.waitFor('settings.json');
    session.type('?\r');
    await session.waitFor('attached src/settings.json (1 lines)');
    await session.waitFor('It is 42.');
    const sent = sentText(scripted, 0);
    expect(sent).toContain('what is in @src/settings.json?');
    expect(sent).toContain('<file path="src/settings.json">\n{ "answer": 42 }\n</file>');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('@image.png attaches the image as an image part', async () => {
    const cwd = temp('hermes-ws-');
    // A 1×1 PNG.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    writeFileSync(join(cwd, 'shot.png'), png);
    const scripted = await server([step(text('A single pixel.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor(READY);
    session.type('what is in @shot.png\r');
    await session.waitFor('attached shot.png (image, image/png)');
    await session.waitFor('A single pixel.');
    const sent = JSON.stringify(scripted.calls[0]?.messages);
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    expect(sent).toContain('what is in @shot.png');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('Ctrl-V on an empty line explains that a terminal cannot paste an image', async () => {
    const scripted = await server([]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('\x16');
    await session.waitFor('terminals do not pass images to programs');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });
});

describe('modes and pickers (on a pseudo-terminal)', () => {
  it('Shift-Tab switches to yolo: the prompt and status line say so and a dangerous command runs unasked', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const scripted = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Removed.'))]);
    const session = chat([], { ...modelEnv(scripted.baseURL), NO_COLOR: '1' }, cwd);
    await session.waitFor('approvals: manual');
    await session.waitFor(READY);
    session.type('\x1b[Z');
    await session.waitFor('Approval mode: yolo');
    await session.waitFor('yolo › ');
    session.type('clean the build\r');
    await session.waitFor('approved (yolo)');
    await session.waitFor('Removed.');
    await session.waitFor(/─ custom:scripted .* · yolo/);
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    expect(session.text).not.toContain('Run it?');
    session.type('/mode manual\r');
    await session.waitFor('Approval mode: manual');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('/resume without arguments opens a picker; typing filters and Enter resumes', async () => {
    const scripted = await server([step(text('Noted: teal.')), step(text('Noted: amber.'))]);
    const home = newHome();
    const cwd = temp('hermes-ws-');
    for (const [colour, title] of [
      ['teal', 'Teal notes'],
      ['amber', 'Amber notes'],
    ]) {
      const session = chat([], { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' }, cwd);
      await session.waitFor(READY);
      session.type(`My colour is ${colour}.\r`);
      await session.waitFor(`Noted: ${colour}.`);
      session.type(`/title ${title}\r`);
      await session.waitFor('Title set');
      session.type('/exit\r');
      expect((await session.exited).code).toBe(0);
    }
    const session = chat([], { ...modelEnv(scripted.baseURL, home), NO_COLOR: '1' }, cwd);
    await session.waitFor(READY);
    session.type('/resume\r');
    await session.waitFor('Resume which session?');
    await session.waitFor('Amber notes');
    session.type('teal');
    // The filter applies asynchronously: Enter counts once only the matching session is listed.
    await session.waitFor(/teal\s*\n❯ Teal notes[^\n]*\n\s*\n/);
    session.type('\r');
    await session.waitFor('you: My colour is teal.');
    await session.waitFor(/─ custom:scripted · Teal notes/);
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('/model without arguments opens a picker of the available models; Enter switches', async () => {
    const scripted = await server([]);
    const env = { ...modelEnv(scripted.baseURL), NO_COLOR: '1', OPENAI_API_KEY: 'sk-test-not-used' };
    const session = chat([], env, temp('hermes-ws-'));
    await session.waitFor(READY);
    session.type('/model\r');
    await session.waitFor('Model (now custom:scripted');
    session.type('gpt-4.1-mini');
    await session.waitFor(/gpt-4\.1-mini\s*\n❯ openai:gpt-4\.1-mini[^\n]*\n\s*\n/);
    session.type('\r');
    await session.waitFor('Model switched to openai:gpt-4.1-mini');
    await session.waitFor('› ');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });

  it('without a model the chat runs the offline demo model and its banner says so', async () => {
    const session = chat([], { ...modelEnv(null), NO_COLOR: '1' }, temp('hermes-ws-'));
    await session.waitFor('offline demo model answers');
    await session.waitFor(READY);
    session.type('hello\r');
    await session.waitFor('Run it?');
    session.type('d');
    await session.waitFor('You said: "hello".');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
  });
});
