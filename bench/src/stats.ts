/** The `fraction` percentile of ascending `sorted` samples (nearest rank). */
export function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN;
}

/** The median of unsorted samples. */
export function median(samples: number[]): number {
  return percentile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );
}

/**
 * Each of `fields` as its own median over the samples: on a shared machine one sample's wall, CPU and first delta
 * are each disturbed at different times, so no single sample is the typical one.
 */
export function fieldMedians<T extends Record<K, number>, K extends keyof T>(
  samples: T[],
  fields: readonly K[],
): Pick<T, K> {
  const result = {} as Pick<T, K>;
  for (const field of fields) result[field] = median(samples.map((sample) => sample[field])) as T[K];
  return result;
}
