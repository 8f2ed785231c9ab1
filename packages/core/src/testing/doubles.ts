/**
 * The test doubles of `@hermes/core/testing` (spec/core.md §22): script format and builders, the scripted fake
 * model and provider, the scripted OpenAI-compatible server, the fake clock, scripted answers and `collectTurn`.
 * The integrator re-exports this module from `testing/index.ts`.
 */
export { type CollectableRun, collectTurn } from './collect-turn.js';
export {
  type AutoAdvanceOptions,
  createFakeClock,
  FAKE_CLOCK_START,
  type FakeClock,
  type FakeClockOptions,
  hasInFlightRequests,
} from './fake-clock.js';
export {
  DEFAULT_CHUNK_SIZE,
  delay,
  type ExhaustedBehavior,
  fail,
  hang,
  type ModelScript,
  type RecordedCall,
  rawToolCall,
  reasoning,
  type ScriptedError,
  type ScriptedErrorKind,
  type ScriptedToolCall,
  type ScriptFinishReason,
  type ScriptPart,
  type ScriptStep,
  step,
  text,
  toolCall,
} from './script.js';
export {
  createScriptedAnswers,
  type ScriptedAnswer,
  type ScriptedAnswers,
  type ScriptedAnswersOptions,
} from './scripted-answers.js';
export {
  createScriptedModel,
  createScriptedProvider,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedProvider,
  type ScriptedProviderOptions,
} from './scripted-model.js';
export {
  type RecordedHttpRequest,
  type ScriptedServer,
  type ScriptedServerOptions,
  startScriptedOpenAIServer,
} from './scripted-server.js';
export { findAlternationViolation, type StrictAlternationRule } from './strict-alternation.js';
