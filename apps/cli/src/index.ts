/**
 * @hermes/cli: the `hermes` command.
 *
 * @packageDocumentation
 */
export { createProgram } from './program.js';
export { VERSION } from './version.js';
