/**
 * What an OpenAI-compatible model loads on its first use, as one module: the AI SDK's OpenAI-compatible provider
 * (which builds and sends the request) and the lean stream that parses its successful streams (ADR 0014).
 *
 * The build makes this file a bundle of its own (`dist/compatible-sdk.js`, tsup.config.ts) with the provider's
 * dependencies inside it — `@ai-sdk/provider-utils`, `eventsource-parser` and the zod they import, without zod's
 * locales — so that a process's first turn reads and compiles one file instead of resolving, reading, linking and
 * compiling about 110 modules from `node_modules`, 106 of them zod's (ADR 0092). It is kept apart from the core's
 * other chunks so that the core's own zod, which every start loads, is not merged with the provider's whole one.
 */
export { createOpenAICompatible } from '@ai-sdk/openai-compatible';
export { createLeanCompatibleChatModel } from './lean-compatible-chat.js';
