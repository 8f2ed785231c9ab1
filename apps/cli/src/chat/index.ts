/** The interactive terminal chat of `hermes` (the default on a terminal without -q). */
export { type InteractiveChatOptions, runInteractiveChat } from './interactive.js';
