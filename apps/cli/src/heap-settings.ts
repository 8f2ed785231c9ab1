import { setFlagsFromString } from 'node:v8';

/**
 * The V8 heap settings `hermes` gives its own process before it loads its commands (ADR 0078), as apps/server does
 * (ADR 0069):
 *
 * - `--semi-space-growth-factor=1`, by default: the young generation stays at its initial 1 MB semi-spaces. Left to
 *   V8, it grows to 16 MB each while the process loads and warms up, and the first long streamed answer (a few KB
 *   allocated per model delta) touches every page of it: peak RSS rose by about 30 MB between a 1,000-delta and a
 *   10,000-delta turn on every stream path (`hermes acp`, `gateway`, `serve`) and never went back. Since the core sends
 *   a body chunk's deltas as one event, little survives a scavenge, so the small young generation costs a few more
 *   scavenges, not promoted garbage.
 * - `--optimize-for-size`, with `HERMES_V8_HEAP=small` only (5-15% more CPU per short turn, ADR 0069).
 *
 * `HERMES_V8_HEAP=node` sets neither (V8's own sizing), and a heap-sizing V8 flag given on the node command line or in
 * `NODE_OPTIONS` wins: nothing is set then. Set at run time because a growth factor under 2 on the command line did
 * not hold (ADR 0069).
 */
const OPERATOR_SIZING =
  /--(?:no[-_])?(optimize[-_]for[-_]size|max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|min[-_]semi[-_]space[-_]size|heap[-_]growing[-_]percent)\b/;

/** The heap flags for `HERMES_V8_HEAP` (see above), or none when the operator sized the heap. */
export function cliHeapFlags(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string[] {
  if (env.HERMES_V8_HEAP === 'node') return [];
  if (OPERATOR_SIZING.test([...execArgv, env.NODE_OPTIONS ?? ''].join(' '))) return [];
  const flags = ['--semi-space-growth-factor=1'];
  if (env.HERMES_V8_HEAP === 'small') flags.push('--optimize-for-size');
  return flags;
}

/**
 * Applies {@link cliHeapFlags}. Node 20 puts V8's flags back to their start-up values when a worker thread starts (the
 * store's WAL checkpointer, at its 128th write), so they are set again once each worker is online (ADR 0107).
 */
export function applyCliHeapSettings(env: NodeJS.ProcessEnv, execArgv: readonly string[]): void {
  const flags = cliHeapFlags(env, execArgv);
  if (flags.length === 0) return;
  const apply = () => {
    for (const flag of flags) setFlagsFromString(flag);
  };
  apply();
  process.on('worker', (worker) => worker.once('online', apply));
}
