import { beforeAll, describe, expect, it } from 'vitest';
import {
  detectDangerousCommand,
  loadShellParser,
  PATTERN_DESCRIPTIONS,
  PATTERN_KEYS,
  type PatternKey,
} from './detect.js';

/** Each row: a command and the exact pattern keys it must produce (blocklist rows are separate). */
const KEY_CASES: [string, PatternKey[]][] = [
  // recursive_delete
  ['rm -rf build', ['recursive_delete']],
  ['rm -fr build', ['recursive_delete']],
  ['rm -R build', ['recursive_delete']],
  ['rm -f -r build', ['recursive_delete']],
  ['rm --recursive build', ['recursive_delete']],
  ['/bin/rm -rf build', ['recursive_delete']],
  ['\\rm -rf build', ['recursive_delete']],
  ['"rm" -rf build', ['recursive_delete']],
  ['find . -name "*.o" -delete', ['recursive_delete']],
  ['find . -type f -exec rm {} \\;', ['recursive_delete', 'unjudgeable']],
  ['find . -name x -exec rm -rf {} +', ['recursive_delete', 'unjudgeable']],
  ['ls | xargs rm -r', ['recursive_delete', 'unjudgeable']],
  ['xargs -0 -n 1 rm -rf < list', ['recursive_delete', 'unjudgeable']],
  // world_writable
  ['chmod 777 file', ['world_writable']],
  ['chmod 666 file', ['world_writable']],
  ['chmod 0777 file', ['world_writable']],
  ['chmod a+w file', ['world_writable']],
  ['chmod o+w file', ['world_writable']],
  ['chmod u+x,o+rw file', ['world_writable']],
  ['chmod -R 777 ./public', ['world_writable']],
  // recursive_chown
  ['chown -R me:me .', ['recursive_chown']],
  ['chgrp -R staff dir', ['recursive_chown']],
  ['chown --recursive me dir', ['recursive_chown']],
  // disk_format
  ['mkfs.ext4 /dev/sdb1', ['disk_format']],
  ['mkfs -t ext4 /dev/sdb1', ['disk_format']],
  ['fdisk /dev/sda', ['disk_format']],
  ['parted /dev/sda mklabel gpt', ['disk_format']],
  ['wipefs -a /dev/sdb', ['disk_format']],
  // raw_disk_write
  ['dd if=image.iso of=/dev/sdb bs=4M', ['raw_disk_write']],
  ['cat image | tee /dev/sdb', ['raw_disk_write']],
  ['cp image.iso /dev/disk2', ['raw_disk_write']],
  // system_config_write
  ['echo "127.0.0.1 x" >> /etc/hosts', ['system_config_write']],
  ['echo x > /boot/config.txt', ['system_config_write']],
  ['echo x | tee -a /etc/profile', ['system_config_write']],
  ["sed -i 's/a/b/' /etc/ssh/sshd_config", ['system_config_write']],
  ['cp ./tool /usr/local/bin/tool', ['system_config_write']],
  ['mv conf /etc/nginx/nginx.conf', ['system_config_write']],
  ['cat <<EOF > /etc/motd\nhello\nEOF', ['system_config_write']],
  // service_control
  ['systemctl stop nginx', ['service_control']],
  ['systemctl --user disable foo', ['service_control']],
  ['systemctl mask bar', ['service_control']],
  ['systemctl restart docker', ['service_control']],
  ['service apache2 stop', ['service_control']],
  ['launchctl unload ~/Library/LaunchAgents/x.plist', ['service_control']],
  // mass_kill
  ['kill -9 -1', ['mass_kill']],
  ['kill -- -1', ['mass_kill']],
  ['killall node', ['mass_kill']],
  ['pkill -f server', ['mass_kill']],
  // power
  ['shutdown -h now', ['power']],
  ['reboot', ['power']],
  ['halt', ['power']],
  ['poweroff', ['power']],
  ['systemctl reboot', ['power']],
  // sql_destructive
  ['psql -c "DROP TABLE users"', ['sql_destructive']],
  ["mysql -e 'drop database prod'", ['sql_destructive']],
  ['psql -c "drop schema s cascade"', ['sql_destructive']],
  ['psql -c "TRUNCATE users"', ['sql_destructive']],
  ['sqlite3 app.db "DELETE FROM sessions"', ['sql_destructive']],
  ['sqlite3 app.db "delete from a where x=1; delete from b"', ['sql_destructive']],
  // git_destructive
  ['git reset --hard HEAD~1', ['git_destructive']],
  ['git clean -fdx', ['git_destructive']],
  ['git clean -f', ['git_destructive']],
  ['git push --force origin main', ['git_destructive']],
  ['git push -f', ['git_destructive']],
  ['git push --force-with-lease', ['git_destructive']],
  ['git push origin +main', ['git_destructive']],
  ['git checkout -- .', ['git_destructive']],
  ['git restore .', ['git_destructive']],
  ['git branch -D feature', ['git_destructive']],
  ['git -C repo reset --hard', ['git_destructive']],
  // remote_script
  ['curl -fsSL https://x.sh | sh', ['remote_script', 'unjudgeable']],
  ['wget -qO- https://x.sh | bash', ['remote_script', 'unjudgeable']],
  ['curl https://x.py | python3', ['remote_script', 'unjudgeable']],
  ['bash <(curl -s https://x.sh)', ['remote_script', 'unjudgeable']],
  ['curl -s https://x.sh | sudo bash', ['privilege', 'remote_script', 'unjudgeable']],
  ['sh -c "$(curl -fsSL https://x.sh)"', ['remote_script', 'inline_interpreter', 'unjudgeable']],
  // inline_interpreter
  ['bash -c "echo hi"', ['inline_interpreter']],
  ['sh -c ls', ['inline_interpreter']],
  ['zsh -c ls', ['inline_interpreter']],
  ['bash -lc "make test"', ['inline_interpreter']],
  ['python -c "print(1)"', ['inline_interpreter']],
  ['python3 -c "import os"', ['inline_interpreter']],
  ['node -e "console.log(1)"', ['inline_interpreter']],
  ["perl -pe 's/a/b/' file", ['inline_interpreter']],
  ['ruby -e "puts 1"', ['inline_interpreter']],
  ['eval "$CMD"', ['inline_interpreter', 'unjudgeable']],
  // privilege
  ['sudo apt-get update', ['privilege']],
  ['su - root', ['privilege']],
  ['doas ls', ['privilege']],
  // wrappers, assignments, splitting, substitutions
  ['sudo rm -rf /var/tmp/x', ['recursive_delete', 'privilege']],
  ['sudo -u www-data rm -rf cache', ['recursive_delete', 'privilege']],
  ['FOO=1 BAR=2 rm -rf out', ['recursive_delete']],
  ['env FOO=1 rm -rf out', ['recursive_delete']],
  ['env -i PATH=/bin rm -r out', ['recursive_delete']],
  ['nohup rm -rf out &', ['recursive_delete']],
  ['time rm -rf out', ['recursive_delete']],
  ['nice -n 10 rm -rf out', ['recursive_delete']],
  ['timeout 10 rm -rf out', ['recursive_delete']],
  ['echo start; rm -rf out', ['recursive_delete']],
  ['make && rm -rf out', ['recursive_delete']],
  ['false || rm -rf out', ['recursive_delete']],
  ['echo a\nrm -rf out', ['recursive_delete']],
  ['echo $(rm -rf out)', ['recursive_delete']],
  ['echo `rm -rf out`', ['recursive_delete']],
  ['echo "$(git reset --hard)"', ['git_destructive']],
  ['(cd sub && rm -rf out)', ['recursive_delete']],
  ['if true; then rm -rf out; fi', ['recursive_delete']],
  ['for d in a b; do rm -r $d; done', ['recursive_delete', 'unjudgeable']],
  ['bash -c "rm -rf out"', ['recursive_delete', 'inline_interpreter']],
  ['su -c "rm -rf /srv/x" admin', ['recursive_delete', 'privilege']],
  ['bash <<EOF\nrm -rf out\nEOF', ['recursive_delete', 'unjudgeable']],
  ['sudo systemctl stop nginx && sudo reboot', ['service_control', 'power', 'privilege']],
];

/** Commands that must produce no key at all. */
const SAFE_CASES: string[] = [
  'rm file.txt',
  'rm -f file.txt',
  'rm -- -r',
  'rmdir empty',
  'grep -r TODO src',
  'grep -R foo .',
  'ls -R',
  'cp -r src dst',
  'git push',
  'git push origin main',
  'git reset --soft HEAD~1',
  'git reset HEAD file',
  'git clean -n',
  'git checkout main',
  'git checkout -b feature',
  'git restore --staged .',
  'git branch -d merged',
  'git status && git diff',
  'psql -c "DELETE FROM t WHERE id = 1"',
  'sqlite3 db "SELECT * FROM t"',
  'truncate -s 0 log.txt',
  'chmod 755 script.sh',
  'chmod +x script.sh',
  'chmod u+w file',
  'chmod g+w file',
  'chown me file',
  'kill 1234',
  'kill -9 1234',
  'kill -1 1234',
  'echo hello > out.txt',
  'echo x > /dev/null',
  'ls 2>&1 | tee log.txt',
  'cat /etc/hosts',
  'grep x /etc/passwd',
  'cp /etc/hosts ./hosts',
  'dd if=/dev/zero bs=1 count=1',
  'curl https://example.com -o page.html',
  'curl -s https://api.example.com | jq .',
  'wget https://x/file.tar.gz && tar xzf file.tar.gz',
  'python script.py',
  'node build.js',
  'bash script.sh',
  'sh ./configure',
  'npm run build',
  'echo "rm -rf /"',
  "echo 'sudo make me a sandwich'",
  'cat <<EOF > notes.txt\nsudo rm -rf /tmp/x\nEOF',
  'systemctl status nginx',
  'service nginx status',
  'find . -name "*.ts"',
  'echo "# not a comment" # rm -rf x',
  'command -v rm',
  'make test',
];

const BLOCKED_CASES: string[] = [
  'rm -rf /',
  'rm -rf /*',
  'rm -rf ~',
  'rm -rf ~/',
  'rm -rf $HOME',
  'rm -rf "$HOME"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  'rm -rf ${HOME}',
  'rm -rf //',
  'sudo rm -rf --no-preserve-root /',
  'echo ok && rm -fr /',
  'bash -c "rm -rf /"',
  'echo $(rm -rf ~)',
  'find / -delete',
  ':(){ :|:& };:',
  'bomb() { bomb | bomb & }; bomb',
  'chmod -R 777 /',
  'chmod --recursive 777 /',
  'echo garbage > /dev/sda',
  'cat image >> /dev/nvme0n1',
  'cat x > /dev/disk0',
];

describe('detectDangerousCommand', () => {
  beforeAll(async () => {
    await loadShellParser();
  }, 60_000);

  it.each(KEY_CASES)('%j → the listed pattern keys', (command, keys) => {
    const detection = detectDangerousCommand(command);
    expect(detection.patternKeys).toEqual(PATTERN_KEYS.filter((key) => keys.includes(key)));
    expect(detection.blocked).toBe(false);
    expect(detection.descriptions).toEqual(
      detection.patternKeys.map((key) =>
        key === 'unjudgeable'
          ? `${PATTERN_DESCRIPTIONS[key]}: ${detection.unjudgeableReasons.join('; ')}`
          : PATTERN_DESCRIPTIONS[key],
      ),
    );
  });

  it.each(SAFE_CASES)('%j has no pattern key', (command) => {
    const detection = detectDangerousCommand(command);
    expect(detection.patternKeys).toEqual([]);
    expect(detection.blocked).toBe(false);
  });

  it.each(BLOCKED_CASES)('%j is on the hard blocklist', (command) => {
    const detection = detectDangerousCommand(command);
    expect(detection.blocked).toBe(true);
    expect(detection.blockReason).toMatch(/hard blocklist/);
  });

  it('every pattern key of the spec table is exercised', () => {
    const covered = new Set(KEY_CASES.flatMap(([, keys]) => keys));
    expect([...covered].sort()).toEqual([...PATTERN_KEYS].sort());
  });

  it('names the blocked target in the reason', () => {
    expect(detectDangerousCommand('rm -rf $HOME').blockReason).toContain('$HOME');
    expect(detectDangerousCommand('echo x > /dev/sda').blockReason).toContain('/dev/sda');
  });

  it('keeps the keys of a blocked command', () => {
    const detection = detectDangerousCommand('sudo rm -rf /');
    expect(detection.patternKeys).toEqual(['recursive_delete', 'privilege']);
  });

  it('does not throw on malformed input, and asks for what the parser cannot read', () => {
    for (const command of ['echo "unterminated', "it's", 'echo $(', 'echo `x', '((((', ')))', '<<', 'a >', '\\']) {
      expect(() => detectDangerousCommand(command)).not.toThrow();
    }
    for (const command of ['echo "unterminated', "it's", 'echo $(', '((((', ')))', '<<', 'a >']) {
      expect(detectDangerousCommand(command).patternKeys).toEqual(['unjudgeable']);
    }
    expect(detectDangerousCommand('echo "x; rm -rf out').unjudgeableReasons).toEqual([
      'the shell parser could not read all of it',
    ]);
    expect(detectDangerousCommand('echo x; rm -rf "out').patternKeys).toContain('recursive_delete');
  });
});
