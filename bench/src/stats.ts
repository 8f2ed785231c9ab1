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
