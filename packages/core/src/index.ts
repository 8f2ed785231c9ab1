/**
 * @hermes/core: the agent loop, model providers, tools and the durable session store.
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
