import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { detectDangerousCommand, judgeCommand, loadShellParser, MAX_JUDGED_SCRIPT_BYTES } from './detect.js';

// Scripts run by path are read and judged (docs/adr/0033): real files in a temporary folder.

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
beforeAll(async () => {
  await loadShellParser();
}, 60_000);

/** A temporary working directory with the given files (executable when the name has no dot or ends in .sh). */
function workspace(files: Record<string, string>): string {
  const cwd = mkdtempSync(join(tmpdir(), 'hermes-scripts-'));
  folders.push(cwd);
  for (const [name, content] of Object.entries(files)) {
    const path = join(cwd, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
    chmodSync(path, 0o755);
  }
  return cwd;
}

/** Judges a command run in `cwd`; `written` are the paths (relative to cwd) the agent wrote. */
function judge(command: string, cwd: string, written: string[] = [], searchPath = process.env.PATH ?? '') {
  const paths = new Set(written.map((name) => join(cwd, name)));
  return judgeCommand(command, { cwd, homeDir: cwd, searchPath, writtenByAgent: (path) => paths.has(path) });
}

describe('scripts run by path are judged by their text', () => {
  it('a clean script runs unasked, in every spelling of running it', async () => {
    const cwd = workspace({
      'build.sh': 'set -e\necho building\nmkdir -p out\nls out | grep -c x || true\n',
      tool: '#!/bin/sh\necho hi\n',
    });
    for (const command of [
      'bash build.sh',
      'sh build.sh',
      'zsh build.sh',
      'dash ./build.sh',
      'bash -x build.sh',
      'source build.sh',
      '. ./build.sh',
      './build.sh',
      './tool',
      `${cwd}/build.sh`,
      '~/build.sh',
    ]) {
      expect((await judge(command, cwd)).patternKeys, command).toEqual([]);
    }
  });

  it('a script with rm -rf asks as a recursive delete, naming the script', async () => {
    const cwd = workspace({ 'cleanup.sh': '#!/bin/bash\necho tidy\nrm -rf victim\n' });
    for (const command of [
      'bash cleanup.sh',
      'sh cleanup.sh',
      './cleanup.sh',
      'source cleanup.sh',
      '. ./cleanup.sh',
      'bash -x cleanup.sh',
      'sudo -u me bash cleanup.sh',
      'echo start && bash cleanup.sh; echo done',
      'timeout 10 ./cleanup.sh',
    ]) {
      const detection = await judge(command, cwd);
      expect(detection.patternKeys, command).toContain('recursive_delete');
    }
    const detection = await judge('bash cleanup.sh', cwd);
    expect(detection.patternKeys).toEqual(['recursive_delete']);
    expect(detection.descriptions).toEqual(['recursive delete (it runs `cleanup.sh`, which does this)']);
    // Without a working directory the text alone is judged, as before: running a script is everyday.
    expect(detectDangerousCommand('bash cleanup.sh').patternKeys).toEqual([]);
  });

  it('an evasion inside the script asks as unjudgeable, with the reason', async () => {
    const cwd = workspace({ 'x.sh': 'X=rm; $X -rf d\n' });
    const detection = await judge('bash x.sh', cwd);
    expect(detection.patternKeys).toEqual(['unjudgeable']);
    expect(detection.unjudgeableReasons).toEqual([
      '`x.sh`, which it runs: the program name `$X` is only known when it runs',
    ]);
  });

  it('a script without a #! line run by path is a shell script (bash runs it itself)', async () => {
    const cwd = workspace({ go: 'rm -r d\n' });
    expect((await judge('./go', cwd)).patternKeys).toEqual(['recursive_delete']);
  });

  it('a #! line naming a shell through env counts; one naming python does not', async () => {
    const cwd = workspace({
      a: '#!/usr/bin/env bash\nrm -rf d\n',
      b: '#!/usr/bin/env -S bash -e\nrm -rf d\n',
      c: '#!/usr/bin/env python3\nimport shutil\nshutil.rmtree("d")\n',
    });
    expect((await judge('./a', cwd)).patternKeys).toEqual(['recursive_delete']);
    expect((await judge('./b', cwd)).patternKeys).toEqual(['recursive_delete']);
    // An existing python program is everyday (ADR 0033); the agent did not write it.
    expect((await judge('./c', cwd)).patternKeys).toEqual([]);
    expect((await judge('./c', cwd, ['c'])).patternKeys).toEqual(['unjudgeable']);
  });

  it('a binary program run by path is not read as a script', async () => {
    const cwd = workspace({});
    expect((await judge(`${process.execPath} --version`, cwd)).patternKeys).toEqual([]);
  });

  it('scripts that run scripts are followed, and a blocklisted command in one blocks the command', async () => {
    const cwd = workspace({
      'outer.sh': 'echo outer\nbash scripts/inner.sh\n',
      'scripts/inner.sh': 'git push --force origin main\n',
      'root.sh': 'rm -rf /\n',
      'loop.sh': 'bash loop.sh\n',
    });
    const nested = await judge('bash outer.sh', cwd);
    expect(nested.patternKeys).toEqual(['git_destructive']);
    expect(nested.descriptions[0]).toContain('`scripts/inner.sh`');
    const blocked = await judge('bash root.sh', cwd);
    expect(blocked.blocked).toBe(true);
    expect(blocked.blockReason).toBe(
      '`root.sh`, which it runs: recursive delete of / is on the hard blocklist and never runs',
    );
    expect((await judge('bash loop.sh', cwd)).patternKeys).toEqual([]);
  });

  it('a script in a directory the command line changes to is found there', async () => {
    const cwd = workspace({ 'sub/tidy.sh': 'rm -rf d\n', 'sub/ok.sh': 'echo ok\n' });
    expect((await judge('cd sub && bash tidy.sh', cwd)).patternKeys).toEqual(['recursive_delete']);
    expect((await judge('cd sub && ./ok.sh', cwd)).patternKeys).toEqual([]);
    // A clean namesake in the cwd does not hide the one the command reaches after `cd`.
    writeFileSync(join(cwd, 'tidy.sh'), 'echo clean\n');
    expect((await judge('cd sub && bash tidy.sh', cwd)).patternKeys).toEqual(['recursive_delete']);
    expect((await judge('cd "$(echo sub)" && bash ok.sh', cwd)).unjudgeableReasons).toEqual([
      'it runs `ok.sh` in a directory that is only known when it runs',
    ]);
  });

  it('a script that cannot be judged asks: missing, too large, not a regular file', async () => {
    const cwd = workspace({ 'big.sh': `${'echo padding\n'.repeat(MAX_JUDGED_SCRIPT_BYTES / 13 + 1)}` });
    const missing = await judge('sleep 5; bash later.sh', cwd);
    expect(missing.unjudgeableReasons).toEqual(['it runs `later.sh`, which cannot be found before it runs']);
    expect((await judge('sleep 5; ./later', cwd)).patternKeys).toEqual(['unjudgeable']);
    // What a python script holds is not judged unless the agent wrote it, so a missing one is everyday.
    expect((await judge('tsc -p . && node dist/main.js', cwd)).patternKeys).toEqual([]);
    const large = await judge('bash big.sh', cwd);
    expect(large.unjudgeableReasons).toEqual(['it runs `big.sh`, which is too large to judge (over 256 KiB)']);
    execFileSync('mkfifo', [join(cwd, 'pipe.sh')]);
    const fifo = await judge('bash pipe.sh', cwd);
    expect(fifo.unjudgeableReasons).toEqual(['it runs `pipe.sh`, which is not a regular file']);
    // Written and run by the same command line: reported once, as such.
    const same = await judge("printf 'rm -rf d' > new.sh; bash new.sh", cwd);
    expect(same.unjudgeableReasons).toEqual(['it runs `new.sh`, which the same command line writes, copies or links']);
  });
});

describe('scripts the agent wrote', () => {
  it('a python script written by the agent asks; one it did not write runs unasked', async () => {
    const cwd = workspace({ 'tidy.py': 'import shutil\nshutil.rmtree("d")\n', 'report.py': 'print(1)\n' });
    const written = await judge('python3 tidy.py', cwd, ['tidy.py']);
    expect(written.patternKeys).toEqual(['unjudgeable']);
    expect(written.unjudgeableReasons).toEqual([
      'it runs `tidy.py`, which the agent wrote in this session and which is not a shell script',
    ]);
    expect((await judge('python3 report.py', cwd)).patternKeys).toEqual([]);
    expect((await judge('python3 -u tidy.py --all', cwd, ['tidy.py'])).patternKeys).toEqual(['unjudgeable']);
  });

  it('node, perl and ruby scripts written by the agent ask too', async () => {
    const cwd = workspace({
      'x.js': 'console.log(1)\n',
      'x.pl': 'print 1;\n',
      'x.rb': 'puts 1\n',
      'x.py': 'print(1)\n',
    });
    const written = ['x.js', 'x.pl', 'x.rb', 'x.py'];
    for (const command of [
      'node x.js',
      'perl x.pl',
      'ruby x.rb',
      'env node ./x.js',
      'deno run --allow-all x.js',
      'bun x.js',
      'bun run x.js',
      'npx tsx x.js',
      'uv run x.py',
    ]) {
      expect((await judge(command, cwd, written)).patternKeys, command).toEqual(['unjudgeable']);
      // The same scripts, not written by the agent, are everyday.
      expect((await judge(command, cwd)).patternKeys, command).toEqual([]);
    }
  });

  it('a shell script written by the agent runs unasked when its text is clean', async () => {
    const cwd = workspace({ 'build.sh': 'echo build\n', 'clean.sh': 'rm -rf out\n' });
    expect((await judge('bash build.sh', cwd, ['build.sh'])).patternKeys).toEqual([]);
    expect((await judge('bash clean.sh', cwd, ['clean.sh'])).patternKeys).toEqual(['recursive_delete']);
  });

  it('a written file reached through a symlink is recognised by its real path', async () => {
    const cwd = workspace({ 'real/x.py': 'print(1)\n' });
    symlinkSync(join(cwd, 'real'), join(cwd, 'link'));
    expect((await judge('python3 link/x.py', cwd, ['real/x.py'])).patternKeys).toEqual(['unjudgeable']);
  });

  it('the digest of the scripts read changes with their text, so a grant can be bound to it', async () => {
    const cwd = workspace({ 'tidy.py': 'print(1)\n', 'run.sh': 'echo 1\n' });
    const first = await judge('python3 tidy.py', cwd, ['tidy.py']);
    expect(first.scriptDigest).toMatch(/^[0-9a-f]{64}$/);
    expect((await judge('python3 tidy.py', cwd, ['tidy.py'])).scriptDigest).toBe(first.scriptDigest);
    writeFileSync(join(cwd, 'tidy.py'), 'print(2)\n');
    expect((await judge('python3 tidy.py', cwd, ['tidy.py'])).scriptDigest).not.toBe(first.scriptDigest);
    expect((await judge('bash run.sh', cwd)).scriptDigest).toMatch(/^[0-9a-f]{64}$/);
    expect((await judge('ls -la', cwd)).scriptDigest).toBeUndefined();
  });

  it('a bare program name is judged when the agent wrote it into the search path', async () => {
    const cwd = workspace({ 'bin/tidy': '#!/usr/bin/env python3\nprint(1)\n', 'bin/wipe': 'rm -rf d\n' });
    const searchPath = `${join(cwd, 'bin')}:${process.env.PATH ?? ''}`;
    expect((await judge('tidy --all', cwd, ['bin/tidy'], searchPath)).patternKeys).toEqual(['unjudgeable']);
    expect((await judge('tidy --all', cwd, [], searchPath)).patternKeys).toEqual([]);
    expect((await judge('wipe', cwd, ['bin/wipe'], searchPath)).patternKeys).toEqual(['recursive_delete']);
    expect((await judge('ls -la && git status', cwd, [], searchPath)).patternKeys).toEqual([]);
  });
});

describe('a search path the command line sets', () => {
  it('puts local scripts within reach of a bare name, and they are judged', async () => {
    const cwd = workspace({ 'cleanup.sh': 'rm -rf victim\n', 'tools/go': 'rm -r d\n' });
    for (const command of [
      'PATH=.:$PATH cleanup.sh',
      'export PATH="$PWD:$PATH"; cleanup.sh',
      'env PATH=.:/usr/bin cleanup.sh',
      'PATH=tools:$PATH go',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
      'export PATH=${PWD}/tools:$PATH && go',
    ]) {
      expect((await judge(command, cwd)).patternKeys, command).toEqual(['recursive_delete']);
    }
    expect((await judge('export PATH="$HOME/.local/bin:$PATH"; ls', cwd)).patternKeys).toEqual([]);
    expect((await judge('PATH=$TOOLS:$PATH ls', cwd)).unjudgeableReasons).toEqual([
      'it sets PATH to a directory that is only known when it runs',
    ]);
  });
});

describe('scripts that predate the session (ADR 0033, decision 8)', () => {
  const wrapper = '#!/bin/sh\nset -e\nexec "$@"\n';

  it('what cannot be judged in an existing wrapper does not ask; the same file changed in the session does', async () => {
    const cwd = workspace({ gradlew: wrapper, 'clean.sh': 'rm -rf build\n' });
    // The session began after the files were written: they predate it.
    const later = Date.now() + 60_000;
    const existing = await judgeCommand('./gradlew build', { cwd, homeDir: cwd, changedSince: later });
    expect(existing.patternKeys).toEqual([]);
    // Their pattern classes still ask.
    const cleaning = await judgeCommand('./clean.sh', { cwd, homeDir: cwd, changedSince: later });
    expect(cleaning.patternKeys).toContain('recursive_delete');
    // A session that began before the files changed (written, copied or touched since) judges them strictly.
    const earlier = Date.now() - 60_000;
    const changed = await judgeCommand('./gradlew build', { cwd, homeDir: cwd, changedSince: earlier });
    expect(changed.patternKeys).toContain('unjudgeable');
  });

  it('an existing script the agent rewrote is judged strictly, whatever its time stamps say', async () => {
    const cwd = workspace({ 'run.sh': wrapper });
    const path = join(cwd, 'run.sh');
    const detection = await judgeCommand('bash run.sh ls', {
      cwd,
      homeDir: cwd,
      changedSince: Date.now() + 60_000,
      writtenByAgent: (candidate) => candidate === path,
    });
    expect(detection.patternKeys).toContain('unjudgeable');
  });
});
