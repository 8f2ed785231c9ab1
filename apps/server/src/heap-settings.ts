import { setFlagsFromString } from 'node:v8';

/**
 * The V8 heap settings the server gives its own process, before it loads anything else (ADR 0069, ADR 0078, ADR 0091).
 *
 * - `--semi-space-growth-factor=1`, by default: the young generation stays at its initial 1 MB semi-spaces instead of
 *   growing to 16 MB each under a high allocation rate. A streamed turn allocates a few KB per model delta; with 20
 *   turns at once the young generation grew to 32 MB, and a burst of streams touched every page of it (about +30 MB
 *   of RSS that never went back). Since the core sends a body chunk's deltas as one event (ADR 0078) little survives
 *   a scavenge, so the small young generation costs a few scavenges, not promoted garbage.
 * - `--heap-growing-percent=10`, with `HERMES_V8_HEAP=small` only: after each full collection the old generation may
 *   grow by 10% of what was live before the next one starts, instead of a factor V8 picks from its collection speed
 *   (up to 4x). 21 turns ending at once each leave several copies of their answer that a 1 MB young generation
 *   promotes; with V8's factor they wait for a full collection that comes late, and the RSS peak of issue 37.2's
 *   round read +41 to +53 MB over idle, against +38 to +43 MB with this flag (ADR 0091). It is not a default: with a
 *   large live heap (1,000 concurrent streams) it makes full collections frequent, and the server's CPU per stream
 *   rose 25-30% in interleaved runs of the bench (2.52 and 2.61 ms per stream without it, 3.18 and 3.36 with it;
 *   2.96-3.00 ms at 25 and 50%).
 * - `--optimize-for-size`, with `HERMES_V8_HEAP=small` only: the old generation grows by a small factor after each
 *   full collection, and collections compact. It costs 5-15% CPU per short turn (ADR 0069).
 *
 * `HERMES_V8_HEAP=node` sets none of them (V8's own sizing). The first and the last cannot be given on the command line
 * for the same effect: `--optimize-for-size` is not accepted in `NODE_OPTIONS`, and a growth factor under 2 on the
 * command line did not hold; set here, after the heap exists, all three take effect for everything the process
 * allocates from then on (V8 reads them each time it sizes a space or sets the next collection's limit). A
 * heap-sizing V8 flag the operator gave on the node command line or in `NODE_OPTIONS` wins: nothing is set then.
 */
export const SERVER_V8_FLAGS = [
  '--semi-space-growth-factor=1',
  '--heap-growing-percent=10',
  '--optimize-for-size',
] as const;

/** The flags set when `HERMES_V8_HEAP` is not given. */
export const DEFAULT_SERVER_V8_FLAGS = ['--semi-space-growth-factor=1'] as const;

/** V8 options that mean the operator chose the heap's sizing. */
const OPERATOR_SIZING =
  /--(?:no[-_])?(optimize[-_]for[-_]size|max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|min[-_]semi[-_]space[-_]size|heap[-_]growing[-_]percent)\b/;

/**
 * The heap flags for `HERMES_V8_HEAP` (unset: {@link DEFAULT_SERVER_V8_FLAGS}; `small`: {@link SERVER_V8_FLAGS};
 * `node`: none), or none when the operator sized the heap.
 */
export function serverHeapFlags(env: NodeJS.ProcessEnv, execArgv: readonly string[]): readonly string[] {
  if (env.HERMES_V8_HEAP === 'node') return [];
  if (OPERATOR_SIZING.test([...execArgv, env.NODE_OPTIONS ?? ''].join(' '))) return [];
  return env.HERMES_V8_HEAP === 'small' ? SERVER_V8_FLAGS : DEFAULT_SERVER_V8_FLAGS;
}

/**
 * Applies {@link serverHeapFlags}; returns them. Node 20 puts V8's flags back to their start-up values when a worker
 * thread starts (the store's WAL checkpointer, at its 128th write), so they are set again once each worker is online
 * (ADR 0107); before this, a server past its 128th write ran on V8's own sizing.
 */
export function applyServerHeapSettings(env: NodeJS.ProcessEnv, execArgv: readonly string[]): readonly string[] {
  const flags = serverHeapFlags(env, execArgv);
  if (flags.length === 0) return flags;
  const apply = () => {
    for (const flag of flags) setFlagsFromString(flag);
  };
  apply();
  process.on('worker', (worker) => worker.once('online', apply));
  return flags;
}
