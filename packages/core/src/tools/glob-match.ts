import { lazyDependency } from '../util/import-on-first-use.js';

/** picomatch, imported when a tool first matches a glob: start-up never needs it. */
export const loadPicomatch = lazyDependency(async () => (await import('picomatch')).default);
