import type * as HermesCore from '@hermes/core';

/** The runtime exports of `@hermes/core`. */
export type CoreModule = typeof HermesCore;

let importing: Promise<CoreModule> | undefined;
let imported: CoreModule | undefined;

/**
 * Imports `@hermes/core` once, when the first host is created. No module of this package imports
 * the core statically: `initialize` is answered before the core, its store and its tools are
 * loaded (spec/acp.md §2.4), which is most of the agent's start-up time.
 */
export function importCore(): Promise<CoreModule> {
  importing ??= import('@hermes/core').then((core) => {
    imported = core;
    return core;
  });
  return importing;
}

/** The core once {@link importCore} has resolved; until then no core object can reach this package. */
export function importedCore(): CoreModule | undefined {
  return imported;
}
