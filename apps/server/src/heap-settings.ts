import { setFlagsFromString } from 'node:v8';

/**
 * The V8 heap settings the server gives its own process with `HERMES_V8_HEAP=small` (ADR 0069), before it loads
 * anything else:
 *
 * - `--semi-space-growth-factor=1`: the young generation stays at its initial 1 MB semi-spaces instead of growing to
 *   16 MB each under a high allocation rate. A streamed turn allocates a few KB per delta; with 20 turns at once the
 *   young generation grew to 32 MB and stayed so.
 * - `--optimize-for-size`: the old generation grows by a small factor after each full collection, and collections
 *   compact, so the garbage promoted while many turns stream is taken at a few MB instead of at a multiple of what is
 *   live.
 *
 * Neither can be given on the command line for the same effect: `--optimize-for-size` is not accepted in
 * `NODE_OPTIONS`, and a growth factor under 2 on the command line did not hold; set here, after the heap exists, both
 * take effect for everything the process allocates from then on. They cost 5-15% CPU per short turn, and they are
 * not the default yet: with them a cross-instance live-session test (test/live-sessions.test.ts, 35.4) failed in
 * about half its runs, a timing race ADR 0069 describes. A heap-sizing V8 flag the operator gave on the node command
 * line or in `NODE_OPTIONS` wins: nothing is set then.
 */
export const SERVER_V8_FLAGS = ['--semi-space-growth-factor=1', '--optimize-for-size'] as const;

/** V8 options that mean the operator chose the heap's sizing. */
const OPERATOR_SIZING =
  /--(?:no[-_])?(optimize[-_]for[-_]size|max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|min[-_]semi[-_]space[-_]size|heap[-_]growing[-_]percent)\b/;

/** Applies {@link SERVER_V8_FLAGS} with `HERMES_V8_HEAP=small`, unless the operator sized the heap; returns them. */
export function applyServerHeapSettings(env: NodeJS.ProcessEnv, execArgv: readonly string[]): readonly string[] {
  if (env.HERMES_V8_HEAP !== 'small') return [];
  if (OPERATOR_SIZING.test([...execArgv, env.NODE_OPTIONS ?? ''].join(' '))) return [];
  for (const flag of SERVER_V8_FLAGS) setFlagsFromString(flag);
  return SERVER_V8_FLAGS;
}
