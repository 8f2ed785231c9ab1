/**
 * The reverse proxy in front of apps/server instances in the scale benchmark (issue 17.5): nginx when
 * it is installed (`HERMES_BENCH_NGINX` names the binary, else `nginx` on PATH or /usr/sbin/nginx), set
 * up as docs/deploy.md §3 says but round robin (every request may land on either instance, so about
 * half the event streams are read on the instance that does not run them); otherwise http-proxy in a
 * child process of its own, so the proxy never shares a thread with the load generator.
 */
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A running balancer: its URL, what it is, and how to stop it. */
export interface Balancer {
  url: string;
  kind: 'nginx' | 'http-proxy';
  close(): Promise<void>;
}

function nginxBinary(): string | null {
  const named = process.env.HERMES_BENCH_NGINX?.trim();
  if (named) return named;
  const found = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  return existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : null;
}

/** A port free at this moment (nginx cannot listen on port 0 and report it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function waitListening(url: string, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`the balancer exited with ${child.exitCode}`);
    const answered = await fetch(`${url}/health`).then(
      () => true,
      () => false,
    );
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the balancer at ${url} did not answer`);
}

function stop(child: ChildProcess, cleanup: () => void): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      cleanup();
      resolve();
      return;
    }
    child.once('exit', () => {
      cleanup();
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function startNginx(binary: string, targets: string[]): Promise<Balancer> {
  const prefix = mkdtempSync(join(tmpdir(), 'hermes-nginx-'));
  for (const folder of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(prefix, folder));
  const port = await freePort();
  const servers = targets.map((target) => `    server ${new URL(target).host};`).join('\n');
  writeFileSync(
    join(prefix, 'nginx.conf'),
    `worker_processes 1;
daemon off;
master_process off;
pid ${prefix}/nginx.pid;
error_log stderr error;
worker_rlimit_nofile 16384;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  upstream hermes {
${servers}
    keepalive 256;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://hermes;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 1h;
    }
  }
}
`,
  );
  const child = spawn(binary, ['-p', prefix, '-c', join(prefix, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const cleanup = () => rmSync(prefix, { recursive: true, force: true });
  try {
    await waitListening(url, child);
  } catch (error) {
    await stop(child, cleanup);
    throw error;
  }
  return { url, kind: 'nginx', close: () => stop(child, cleanup) };
}

async function startHttpProxy(targets: string[]): Promise<Balancer> {
  const child = fork(fileURLToPath(new URL('./balancer-process.ts', import.meta.url)), targets, {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`the http-proxy balancer exited with ${code}`)));
  });
  return { url, kind: 'http-proxy', close: () => stop(child, () => {}) };
}

/** Starts a round-robin reverse proxy over `targets` (base URLs); nginx when installed. */
export async function startBalancer(targets: string[]): Promise<Balancer> {
  const nginx = nginxBinary();
  return nginx ? startNginx(nginx, targets) : startHttpProxy(targets);
}
