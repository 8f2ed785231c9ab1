// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
import { beforeAll, describe, expect, it } from 'vitest';
import { detectDangerousCommand, judgeCommand, loadShellParser } from './detect.js';

/**
 * Spellings of a recursive delete (or of running one) that try to slip past the approval check
 * (issue 32). In the default `manual` mode every one of them must ask: each produces at least one
 * pattern key (or is blocked outright).
 */
const EVASIONS: string[] = [
  "echo 'rm -rf d' | bash",
  "printf 'rm -rf d\n' | sh",
  'bash -s <<< "rm -rf d"',
  'sh < <(echo rm -rf d)',
  'python3 - <<EOF\nimport shutil\nshutil.rmtree("d")\nEOF',
  'X=rm; $X -rf d',
  '$(echo rm) -rf d',
  '${RM:-rm} -rf d',
  'IFS=,; c=rm,-rf,d; $c',
  'awk \'BEGIN{system("rm -rf d")}\'',
  'setsid rm -rf d',
  "git -c alias.x='!rm -rf d' x",
  "echo 'rm -rf d' > x.sh; bash x.sh",
  "printf 'rm -rf d' > x.sh && chmod +x x.sh && ./x.sh",
  'ln -s /bin/rm x; ./x -rf d',
  'shred -u d/file',
  'tar --remove-files -cf /tmp/a.tar d',
  'rsync -a --delete empty/ d/',
  '`echo rm` -rf d',
  '"$(printf \'\\x72\\x6d\')" -rf d',
  "$'\\x72\\x6d' -rf d",
  'r""m -rf d',
  '{rm,-rf,d}',
  '/bin/r? -rf d',
  'a=(rm -rf d); "${a[@]}"',
  'eval "$(echo cm0gLXJmIGQ= | base64 -d)"',
  'echo cm0gLXJmIGQ= | base64 -d | sh',
  'source <(echo rm -rf d)',
  '. /dev/stdin <<< "rm -rf d"',
  'bash <(echo rm -rf d)',
  'sh -c "$CMD"',
  'find d -exec sh -c \'rm -rf "$1"\' _ {} \\;',
  'echo d | xargs rm -rf',
  "echo '-rf d' | xargs rm",
  'f=-rf; rm $f d',
  'nohup rm -rf d &',
  'timeout 5 rm -rf d',
  'env rm -rf d',
  'stdbuf -o0 rm -rf d',
  'command rm -rf d',
  'builtin eval "rm -rf d"',
  'exec rm -rf d',
  'nice -n 5 rm -rf d',
  'perl -e \'use File::Path; rmtree("d")\'',
  'node -e \'require("fs").rmSync("d",{recursive:true})\'',
  'ruby -e \'require "fileutils"; FileUtils.rm_rf("d")\'',
  'cat x.py | python3',
  'perl < script.pl',
  "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf d' git x",
  "git config alias.x '!rm -rf d' && git x",
  'cp /bin/rm ./del && ./del -rf d',
  'npx rimraf d',
  "trap 'rm -rf d' EXIT",
  'watch -n1 rm -rf d',
  "sed -n '1e rm -rf d' x",
  "echo x | sed 's/x/rm -rf d/e'",
  "alias x='rm -rf'; x d",
  'f() { $1 -rf d; }; f rm',
  'chrt 1 rm -rf d',
  'taskset 1 rm -rf d',
  'flock /tmp/l rm -rf d',
  'sudo rm -rf d',
  'pnpm exec rm -rf d',
  "cat <<'EOF' | bash\nrm -rf d\nEOF",
  'bash <<EOF\nrm -rf d\nEOF',
  'rm -r -f d',
  'rm --recursive --force d',
  '\\rm -rf d',
  "'rm' -rf d",
  '/usr/bin/env rm -rf d',
  'xargs -a list rm -rf',
  'find d -delete',
  'find d -exec rm -rf {} +',
  '(rm -rf d)',
  '{ rm -rf d; }',
  'true && rm -rf d',
  'echo $(rm -rf d)',
  'cat <(rm -rf d)',
  'if true; then rm -rf d; fi',
  'doas rm -rf d',
  'busybox rm -rf d',
  "busybox sh -c 'rm -rf d'",
  'python3 -c \'import shutil; shutil.rmtree("d")\'',
  "bash -c 'rm -rf d'",
  'r\\\nm -rf d',
];

/**
 * Everyday developer commands that must not ask (docs/adr/0033 says where the line is drawn:
 * running an existing script by path, `source .venv/bin/activate`, `sed -i` in the workspace and
 * `xargs grep` are everyday; an inline `python3 -c` is the spec's `inline_interpreter` class).
 */
const EVERYDAY: string[] = [
  'ls',
  'ls -la',
  'ls -R src',
  'pwd',
  'cd src && ls',
  'git status',
  'git diff',
  'git diff --stat HEAD~1',
  'git log --oneline | head',
  'git log --oneline -n 20 --graph',
  'git add -A && git commit -m "fix: handle empty input"',
  "git commit -am 'wip'",
  'git checkout -b feature/x',
  'git switch main',
  'git pull --rebase',
  'git push origin feature/x',
  'git fetch --all --prune',
  'git stash && git stash pop',
  'git branch -a',
  'git show HEAD:README.md',
  'git blame src/index.ts',
  'git rev-parse --abbrev-ref HEAD',
  'git ls-files | wc -l',
  'git grep -n TODO',
  'git tag v1.2.3',
  'git remote -v',
  'git -C packages/core status',
  'git config user.name',
  'rg foo',
  'rg -n "TODO|FIXME" src',
  'grep -rn "import" src | head -20',
  'cat a | grep b',
  'cat package.json | jq .scripts',
  'find . -name "*.ts" -not -path "./node_modules/*"',
  "find src -type f -name '*.test.ts' | xargs grep -l describe",
  "find . -name '*.ts' -exec grep -l foo {} +",
  'fd -e ts',
  'npm test',
  'npm install',
  'npm ci',
  'npm run build',
  'npm run lint -- --fix',
  'npx tsc --noEmit',
  'npx vitest run test/foo.test.ts',
  'npx prettier --write src',
  'pnpm install',
  'pnpm -r build',
  'pnpm --filter @hermes/core test',
  'yarn add lodash',
  'node dist/index.js',
  'node --version',
  'python3 script.py',
  'python3 -m pytest -q',
  'python3 -m venv .venv && . .venv/bin/activate',
  'source .venv/bin/activate',
  'pip install -r requirements.txt',
  'python3 --version',
  'cargo build --release',
  'cargo test',
  'go test ./...',
  'go build -o bin/app ./cmd/app',
  'make',
  'make -j4',
  'make test',
  'cmake -S . -B build && cmake --build build',
  'docker ps',
  'docker compose up -d',
  'docker build -t app .',
  'docker logs -f app --tail 100',
  'kubectl get pods -n default',
  'for f in *.ts; do echo $f; done',
  'for f in $(ls src); do wc -l "src/$f"; done',
  'while read -r line; do echo "$line"; done < input.txt',
  'if [ -f package.json ]; then echo yes; fi',
  '[[ -d node_modules ]] || npm install',
  'echo "$HOME"',
  "echo $PATH | tr ':' '\n'",
  'export NODE_ENV=production',
  'NODE_ENV=test npm test',
  'FOO=bar node app.js',
  'NODE_OPTIONS=--max-old-space-size=4096 npm run build',
  'env | sort',
  'printenv HOME',
  'mkdir -p build/out',
  'touch notes.md',
  'cp -r src backup',
  'mv old.txt new.txt',
  'rm file.txt',
  'rm -f dist/bundle.js',
  'rmdir empty',
  'ln -s ../shared shared',
  'chmod +x scripts/build.sh',
  'chmod 644 README.md',
  'head -n 50 src/index.ts',
  'tail -f log.txt',
  'wc -l src/*.ts',
  'sort data.txt | uniq -c | sort -rn | head',
  'cut -d, -f1 data.csv',
  "sed -n '1,20p' file.txt",
  "sed -i 's/foo/bar/g' src/a.ts",
  "awk '{print $1}' access.log | sort | uniq -c",
  "awk -F: '$3 > 1000 {print $1}' users.txt",
  'diff -u a.txt b.txt',
  'tar xzf archive.tar.gz',
  'tar czf out.tar.gz dist',
  'unzip pkg.zip -d pkg',
  'curl -s https://api.example.com/health | jq .',
  'curl -fsSL -o file.tar.gz https://example.com/file.tar.gz',
  'wget https://example.com/a.txt',
  'ps aux | grep node',
  'kill 12345',
  'lsof -i :3000',
  'df -h',
  'du -sh node_modules',
  'free -m',
  'uname -a',
  'which node',
  'command -v python3',
  'type git',
  'date +%Y-%m-%d',
  'sleep 2',
  'echo done > /tmp/status.txt',
  'echo "$(date) started" >> log.txt',
  'time npm test',
  'timeout 60 npm test',
  'nohup node server.js > server.log 2>&1 &',
  'xargs -n1 echo < list.txt',
  'ssh-keygen -lf key.pub',
  'openssl rand -hex 16',
  "jq '.dependencies | keys' package.json",
  'tsc -p tsconfig.json',
  'eslint src --ext .ts',
  'biome check --write src',
  'bash scripts/test.sh',
  'sh ./configure --prefix=/tmp/x',
  './gradlew build',
  './node_modules/.bin/vitest run',
  'cat <<EOF > notes.txt\nhello $USER\nEOF',
];

it('before the grammar is loaded a command cannot be judged, so it asks; judgeCommand waits for it', async () => {
  const early = detectDangerousCommand('ls');
  expect(early.patternKeys).toEqual(['unjudgeable']);
  expect(early.unjudgeableReasons).toEqual(['the shell parser is not loaded yet']);
  expect((await judgeCommand('ls')).patternKeys).toEqual([]);
}, 60_000);

describe('the evasion and everyday corpora', () => {
  beforeAll(async () => {
    await loadShellParser();
  }, 60_000);

  it('has at least 50 evasions and 100 everyday commands', () => {
    expect(EVASIONS.length).toBeGreaterThanOrEqual(50);
    expect(EVERYDAY.length).toBeGreaterThanOrEqual(100);
  });

  it.each(EVASIONS)('%j asks', (command) => {
    const detection = detectDangerousCommand(command);
    expect(detection.blocked || detection.patternKeys.length > 0).toBe(true);
  });

  it.each(EVERYDAY)('%j asks for nothing', (command) => {
    const detection = detectDangerousCommand(command);
    expect(detection.patternKeys).toEqual([]);
    expect(detection.blocked).toBe(false);
  });

  it('says why a command cannot be judged', () => {
    const detection = detectDangerousCommand("echo 'rm -rf d' | bash");
    expect(detection.patternKeys).toEqual(['unjudgeable']);
    expect(detection.descriptions).toEqual([
      'command that cannot be judged before it runs: `bash` reads its program from a pipe',
    ]);
    expect(detectDangerousCommand('X=rm; $X -rf d').unjudgeableReasons).toEqual([
      'the program name `$X` is only known when it runs',
    ]);
  });
});
