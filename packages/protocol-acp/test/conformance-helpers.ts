import type { ClientCapabilities, ContentBlock, SessionUpdate } from '@agentclientprotocol/sdk/unstable';
import type { ScriptStep } from '@hermes/core/testing';
import { expect } from 'vitest';
import {
  type AgentProcess,
  createFixture,
  type Fixture,
  initialize,
  startAgent,
  type WireLine,
} from './agent-harness.js';

/** Everything one check started, torn down by {@link teardown}. */
export interface Run {
  fixture: Fixture;
  agent: AgentProcess;
  sessionId: string;
}

const started: { fixture: Fixture; agents: AgentProcess[] }[] = [];

/** Creates a fixture and registers it for teardown. */
export async function fixtureFor(options: Parameters<typeof createFixture>[0] = {}): Promise<Fixture> {
  const fixture = await createFixture(options);
  started.push({ fixture, agents: [] });
  return fixture;
}

/** Spawns an agent on `fixture` and registers it for teardown. */
export async function agentOn(fixture: Fixture, options: Parameters<typeof startAgent>[1] = {}): Promise<AgentProcess> {
  const agent = await startAgent(fixture, options);
  const entry = started.find((candidate) => candidate.fixture === fixture);
  entry?.agents.push(agent);
  return agent;
}

/** Fixture, agent, `initialize` and one `session/new`. */
export async function openRun(
  options: {
    script?: ScriptStep[];
    capabilities?: ClientCapabilities;
    fixture?: Parameters<typeof createFixture>[0];
    mode?: 'default' | 'accept-edits' | 'yolo';
    missingFile?: 'resource-not-found' | 'fs-error';
  } = {},
): Promise<Run> {
  const fixture = await fixtureFor({ ...options.fixture, script: options.script ?? [] });
  const agent = await agentOn(fixture, {
    capabilities: options.capabilities ?? {},
    ...(options.missingFile ? { missingFile: options.missingFile } : {}),
  });
  await initialize(agent, options.capabilities ?? {});
  const session = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
  if (options.mode && options.mode !== 'default') {
    await agent.agent.request('session/set_mode', { sessionId: session.sessionId, modeId: options.mode });
  }
  return { fixture, agent, sessionId: session.sessionId };
}

/** Sends a prompt of text (or blocks). */
export function prompt(run: Run, content: string | ContentBlock[], sessionId = run.sessionId) {
  return run.agent.agent.request('session/prompt', {
    sessionId,
    prompt: typeof content === 'string' ? [{ type: 'text', text: content }] : content,
  });
}

/** `session/update` lines of a session, in wire order. */
export function updateLines(agent: AgentProcess, sessionId: string): (WireLine & { update: SessionUpdate })[] {
  return agent.lines
    .filter(
      (line) =>
        line.from === 'agent' &&
        line.message.method === 'session/update' &&
        (line.message.params as { sessionId: string }).sessionId === sessionId,
    )
    .map((line) => ({ ...line, update: (line.message.params as { update: SessionUpdate }).update }));
}

/** Updates of one kind. */
export function updatesOf<K extends SessionUpdate['sessionUpdate']>(
  agent: AgentProcess,
  sessionId: string,
  kind: K,
): (WireLine & { update: Extract<SessionUpdate, { sessionUpdate: K }> })[] {
  return updateLines(agent, sessionId).filter((line) => line.update.sessionUpdate === kind) as never;
}

/** Agent requests of a method (fs, terminal, permission). */
export function agentRequests(agent: AgentProcess, method: string): WireLine[] {
  return agent.lines.filter((line) => line.from === 'agent' && line.message.method === method && 'id' in line.message);
}

/** Expects a JSON-RPC error code from a request promise. */
export async function expectError(promise: Promise<unknown>, code: number): Promise<Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    expect((error as { code?: number }).code, JSON.stringify(error)).toBe(code);
    return error as Record<string, unknown>;
  }
  throw new Error(`expected error ${code}, got a result`);
}

/** Text of the user messages the scripted server received in its last (or given) call. */
export function requestText(call: { messages: unknown[] }): string {
  return JSON.stringify(call.messages);
}

/** Closes every agent (exit code 0 within 8 s), checks the schema, removes the fixtures. */
export async function teardown(failed: boolean): Promise<void> {
  const entries = started.splice(0);
  const problems: string[] = [];
  for (const entry of entries) {
    for (const agent of entry.agents) {
      const code = await agent.close();
      if (code !== 0) problems.push(`exit code ${code}`);
      problems.push(...agent.schemaErrors);
      if (failed || code !== 0 || agent.schemaErrors.length > 0)
        process.stderr.write(`--- agent stderr ---\n${agent.stderr()}\n`);
    }
    await entry.fixture.cleanup();
  }
  expect(problems).toEqual([]);
}

/** Polls `condition` every 20 ms until it holds (5 s deadline, spec/acp.md §19.1). */
export async function eventually(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within the deadline');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
