/**
 * A seeded pseudo-random source (mulberry32), so a failing fault run can be replayed: the seed is printed with the
 * scenario's counts and read back from `HERMES_FAULTS_SEED`.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The seed of this run: `HERMES_FAULTS_SEED` when set, else a new one. */
export function faultSeed(): number {
  const given = Number(process.env.HERMES_FAULTS_SEED);
  return Number.isInteger(given) && given > 0 ? given : Math.floor(Math.random() * 2 ** 31) + 1;
}
