/**
 * The direct client's first read in a fresh process: the floor of the stream paths' "first turn of a fresh
 * process" rows. Plain JavaScript run by node itself (no TypeScript loader), like the built agents it stands beside.
 * Prints `ready` once started, reads the model's SSE when a line arrives on stdin, then prints its figures as JSON:
 * wall time from that line to the end of the body, CPU time of this process over the same span, time to first delta.
 */
import { createInterface } from 'node:readline';

const baseURL = process.argv[2];
const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const _line of lines) {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let first = -1;
  let deltas = 0;
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  });
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let boundary = buffer.indexOf('\n\n');
    while (boundary >= 0) {
      const event = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      if (event.startsWith('data: ') && event !== 'data: [DONE]') {
        const parsed = JSON.parse(event.slice(6));
        if (parsed.choices[0]?.delta.content) {
          if (first < 0) first = performance.now() - started;
          deltas += 1;
        }
      }
      boundary = buffer.indexOf('\n\n');
    }
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  process.stdout.write(
    `${JSON.stringify({ wallMs, cpuMs: (cpu.user + cpu.system) / 1000, firstDeltaMs: first, deltas })}\n`,
  );
  break;
}
lines.close();
