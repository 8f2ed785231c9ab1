import packageJson from '../package.json' with { type: 'json' };

/** The version of this package, as published. */
export const VERSION: string = packageJson.version;
