/**
 * Child-process entry that serves the core's scripted OpenAI-compatible model, so that in a
 * benchmark the model server never shares a thread with the client or the agent it feeds.
 * Steps arrive over IPC (`{ push: ScriptStep[] }`, answered `{ pushed: n }`); the base URL goes
 * back first as `{ baseURL }`.
 */
import { type ScriptStep, startScriptedOpenAIServer } from '@hermes/core/testing';

// `--repeat`: once its steps are used up, the model answers every request with the last one (closed-loop loads,
// whose number of requests is not known in advance).
const server = await startScriptedOpenAIServer({
  script: [],
  models: ['bench'],
  ...(process.argv.includes('--repeat') ? { onExhausted: 'repeat_last' as const } : {}),
});
process.on('message', (message: { push?: ScriptStep[] }) => {
  if (message.push) {
    server.push(...message.push);
    process.send?.({ pushed: message.push.length });
  }
});
process.on('disconnect', () => {
  void server.close().finally(() => process.exit(0));
});
process.send?.({ baseURL: server.baseURL });
