/**
 * The direct client: the floor of the stream paths (issues 11, 18 and 34.3). Reads the model's SSE itself over
 * node:http with a keep-alive agent, the stack the agents use towards the model (ADR 0026), so that the floor and the
 * paths pay for the same HTTP client. Plain JavaScript run by node itself (no TypeScript loader), like the built
 * agents it stands beside, in a process of its own (in a CPU group of its own when the harness is isolated).
 *
 * Prints `ready` once started; for each line on stdin, reads one answer and prints its figures as JSON: wall time from
 * that line to the end of the body, this process's CPU time over the same span, time to first delta, deltas seen.
 * The CPU time is `process.cpuUsage()`: getrusage's sum of every thread's run time, brought up to date for the
 * calling thread, in µs; the agents are read as the same sum, from outside (bench/src/cgroups.ts `processRunTimeMs`,
 * ADR 0110). This process's own `/proc/self/task/<tid>/schedstat` would lag by up to a scheduler tick for the running thread.
 * The first read of a fresh process is the floor of the first-turn rows; later reads are the warm floor.
 */
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';

const baseURL = process.argv[2];
const agent = new Agent({ keepAlive: true });
const body = JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'go' }] });

/** One streamed answer; `onDelta` for each content delta. */
function read(onDelta) {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${baseURL}/chat/completions`, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    outgoing.once('error', reject);
    outgoing.once('response', (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (text) => {
        buffer += text;
        let boundary = buffer.indexOf('\n\n');
        while (boundary >= 0) {
          const event = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          if (event.startsWith('data: ') && event !== 'data: [DONE]') {
            const parsed = JSON.parse(event.slice(6));
            if (parsed.choices[0]?.delta.content) onDelta();
          }
          boundary = buffer.indexOf('\n\n');
        }
      });
      response.once('error', reject);
      response.once('end', resolve);
    });
    outgoing.end(body);
  });
}

const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const _line of lines) {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let first = -1;
  let deltas = 0;
  await read(() => {
    if (first < 0) first = performance.now() - started;
    deltas += 1;
  });
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  process.stdout.write(
    `${JSON.stringify({ wallMs, cpuMs: (cpu.user + cpu.system) / 1000, firstDeltaMs: first, deltas })}\n`,
  );
}
agent.destroy();
