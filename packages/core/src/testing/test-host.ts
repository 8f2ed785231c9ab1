import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentHost, type AgentHostOptions, createAgentHost } from '../agent/host.js';
import { createStderrLogger } from '../logger.js';
import type { ApprovalDecision, ClarifyAnswer, ClarifyRequest } from '../types.js';
import { createFakeClock, type FakeClock } from './fake-clock.js';
import type { ModelScript } from './script.js';
import { createScriptedAnswers, type ScriptedAnswers } from './scripted-answers.js';
import { createScriptedProvider, type ScriptedModel, type ScriptedProvider } from './scripted-model.js';

/** Options of {@link createTestHost}. */
export interface TestHostOptions extends AgentHostOptions {
  /** Script of the model `scripted:test`, the default model. */
  script?: ModelScript;
  /** More scripted models by id (`scripted:<id>`). */
  scripts?: Record<string, ModelScript>;
  /** 'memory' (default) or 'file' (state.db in the home directory). */
  storage?: 'memory' | 'file';
  /** Makes the scripted provider strict-alternation. */
  strictAlternation?: boolean;
  /** Fire the fake clock's timers whenever the process is otherwise idle (default false). */
  autoAdvance?: boolean;
}

/** A host wired for tests (spec/core.md §22.2). */
export interface TestHost extends AgentHost {
  /** The model `scripted:test`. */
  readonly model: ScriptedModel;
  readonly provider: ScriptedProvider;
  readonly clock: FakeClock;
  readonly approvals: ScriptedAnswers<ApprovalDecision>;
  readonly clarifications: ScriptedAnswers<ClarifyAnswer | { answers: Record<string, ClarifyAnswer> }>;
  /** Closes the host and removes the temporary home. */
  dispose(): Promise<void>;
}

/**
 * A host for tests: a fresh HERMES_HOME in the OS temporary folder (or `homeDir`, so two test hosts
 * can share one state.db), an empty environment, MCP off unless asked, scripted approve and clarify
 * callbacks (an empty queue answers `deny` and `null`), and a fake clock wired into the core.
 */
export async function createTestHost(options: TestHostOptions = {}): Promise<TestHost> {
  const ownsHome = options.homeDir === undefined;
  const homeDir = options.homeDir ?? mkdtempSync(join(tmpdir(), 'hermes-test-'));
  const clock =
    (options.clock as FakeClock | undefined) ??
    createFakeClock({ startMs: Date.now(), autoAdvance: options.autoAdvance ?? false });
  const provider = createScriptedProvider(
    { test: options.script ?? [], ...(options.scripts ?? {}) },
    { clock, ...(options.strictAlternation ? { strictAlternation: true } : {}) },
  );
  const approvals = createScriptedAnswers<ApprovalDecision>('deny', { clock });
  const clarifications = createScriptedAnswers<ClarifyAnswer | { answers: Record<string, ClarifyAnswer> }>(null, {
    clock,
  });
  const config = {
    ...(options.config ?? {}),
    model: { default: 'scripted:test', ...(options.config?.model ?? {}) },
  };
  const hostOptions: AgentHostOptions = {
    ...options,
    homeDir,
    env: options.env ?? {},
    config,
    clock,
    providers: [provider, ...(options.providers ?? [])],
    connectMcp: options.connectMcp ?? false,
    logger: options.logger ?? createStderrLogger({ level: 'error' }),
    callbacks: {
      approve: (request, signal) => approvals.callback(request, signal),
      clarify: (request: ClarifyRequest, signal) => clarifications.callback(request, signal),
      ...(options.callbacks ?? {}),
    },
  };
  if ((options.storage ?? 'memory') === 'memory') hostOptions.database = options.database ?? ':memory:';
  const host = await createAgentHost(hostOptions);
  const dispose = async () => {
    await host.close();
    if (ownsHome) rmSync(homeDir, { recursive: true, force: true });
  };
  return Object.defineProperties(host, {
    model: { value: provider.model('test') },
    provider: { value: provider },
    clock: { value: clock },
    approvals: { value: approvals },
    clarifications: { value: clarifications },
    dispose: { value: dispose },
  }) as TestHost;
}
