import { request } from 'node:http';
import { delay, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { dataOf, KEY, type Rig, readFrames, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

type Frame = { event: string; seq?: number };

function eventsIn(frames: string[]): Frame[] {
  return frames.filter((frame) => frame.includes('data: ')).map((frame) => dataOf(frame) as Frame);
}

async function createRun(): Promise<string> {
  const created = (await rig!.native.post('/v1/runs', { body: { input: 'hi' } })) as { run_id: string };
  return created.run_id;
}

async function settled(runId: string): Promise<void> {
  await until(
    async () => ((await rig!.native.get(`/v1/runs/${runId}`)) as { status: string }).status === 'completed',
    20_000,
  );
}

describe('runs events: slow subscribers (spec §19.3)', () => {
  it('a reader that keeps up gets every event on one connection, through bursts of 900 deltas at once', async () => {
    // A network chunk from a real model turns into hundreds of deltas emitted at once (microtasks), while the last
    // write waits for node to uncork it on the next tick: being behind for that long is not being slow.
    const bursts = Array.from({ length: 11 }, () => [text('x'.repeat(900), 1), delay(5)]).flat();
    // The model starts after a pause, so the reader is attached first and the deltas are live events, which the
    // rule is about (a replay is never "behind").
    rig = await startRig({ script: [step(delay(500), ...bursts)] });
    const runId = await createRun();
    const frames = await readFrames(await rig.raw(`/v1/runs/${runId}/events`));
    const events = eventsIn(frames);
    expect(events.filter((event) => event.event === 'message.delta')).toHaveLength(9_900);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.at(-1)?.event).toBe('run.completed');
    expect(frames.at(-1)).toBe(': stream closed');
  });

  it('a reader that stops reading is disconnected while the run goes on, and resumes with Last-Event-ID', async () => {
    // 2,000 deltas of 20,000 characters, 40 MB: several times what the kernel's socket buffers can hold (Linux
    // autotunes them up to about 6 MB received and 4 MB sent) while the reader is paused.
    // The model starts after a pause, so the reader is attached first and every delta is a live event: a run that
    // finished before the reader came is a replay, which the rule leaves alone (it failed that way in CI).
    rig = await startRig({ script: [step(delay(1_000), text('y'.repeat(40_000_000), 20_000))] });
    const runId = await createRun();
    const url = new URL(`${rig.base}/v1/runs/${runId}/events`);
    const body = await new Promise<string>((resolve, reject) => {
      const outgoing = request(url, { headers: { authorization: `Bearer ${KEY}` } }, (response) => {
        let received = '';
        response.setEncoding('utf8');
        response.once('data', (chunk: string) => {
          received += chunk;
          // Stop reading until the run has settled without us.
          response.pause();
          settled(runId).then(() => {
            response.on('data', (more: string) => {
              received += more;
            });
            response.on('end', () => resolve(received));
            response.resume();
          }, reject);
        });
        response.on('error', reject);
      });
      outgoing.on('error', reject);
      outgoing.end();
    });
    const firstFrames = body.split('\n\n').filter((frame) => frame !== '');
    const firstEvents = eventsIn(firstFrames);
    // Dropped: the connection ended before the terminal event and without `: stream closed`.
    expect(firstEvents.some((event) => event.event === 'run.completed')).toBe(false);
    expect(firstFrames.at(-1)).not.toBe(': stream closed');
    const lastSeen = firstEvents.at(-1)?.seq ?? -1;
    expect(lastSeen).toBeGreaterThanOrEqual(0);

    const resumed = await readFrames(
      await rig.raw(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': String(lastSeen) } }),
    );
    const rest = eventsIn(resumed);
    const opening = rest[0];
    // The next event, or the oldest one still retained after a replay.truncated frame naming it.
    if (opening?.event === 'replay.truncated') {
      expect(opening).toMatchObject({ requested_seq: lastSeen });
      expect(rest[1]?.seq).toBe((opening as unknown as { oldest_retained_seq: number }).oldest_retained_seq);
    } else expect(opening?.seq).toBe(lastSeen + 1);
    expect(rest.at(-1)?.event).toBe('run.completed');
    expect(resumed.at(-1)).toBe(': stream closed');
  }, 30_000);
});
