/**
 * The load generator's HTTP client: node:http, the stack the agents use towards the model (ADR 0026), so that a
 * floor and the server are read by the same client, and the lightest the harness has (with `fetch`, the harness took
 * about twice the CPU per stream). Bodies are read as text.
 */
import { type Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { BENCH_KEY } from './server-process.js';

/** One request: its method, body (JSON text) and extra headers. */
export interface LoadRequest {
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  /** A keep-alive agent to reuse connections; `false` (the default) opens one connection for this request. */
  agent?: Agent | false;
  /** Called once the response head arrives. */
  onHead?: (response: IncomingMessage) => void;
  /** Called with each piece of a 2xx body as it arrives; without it the body is collected and returned. */
  onText?: (text: string) => void;
}

/** Sends a request with the bench key; resolves with the status and, when there is no `onText`, the body. */
export function send(url: string, options: LoadRequest = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { authorization: `Bearer ${BENCH_KEY}`, ...options.headers };
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(options.body);
    }
    const request = httpRequest(url, { method: options.method ?? 'POST', agent: options.agent ?? false, headers });
    request.once('error', reject);
    request.once('response', (response: IncomingMessage) => {
      options.onHead?.(response);
      const status = response.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        if (ok && options.onText) options.onText(text);
        else body += text;
      });
      let ended = false;
      response.once('error', reject);
      response.once('end', () => {
        ended = true;
        resolve({ status, body });
      });
      response.once('close', () => {
        if (!ended) reject(new Error('the response closed before its end'));
      });
    });
    request.end(options.body);
  });
}
