import { readFileSync } from 'node:fs';
import type { Agent, AgentHost, TurnResult } from '@hermes/core';
import { createCliHost, describeStartupError } from '../host.js';
import { openSession } from '../session-choice.js';

/** Options of a one-shot run (`hermes -q`). */
export interface OneShotOptions {
  query: string;
  model?: string;
  resume?: string;
  continue?: boolean;
  yolo?: boolean;
  cwd?: string;
}

/** Exit codes of `hermes -q`: completed, failed, cancelled (as after SIGINT). */
export function exitCodeFor(result: TurnResult): number {
  if (result.outcome === 'completed') return 0;
  if (result.outcome === 'cancelled') return 130;
  return 1;
}

/**
 * Runs one prompt and prints the final answer on stdout; progress (tool calls, retries, notices)
 * goes to stderr. Dangerous commands are denied unless `--yolo` (no approve callback is installed).
 */
export async function runOneShot(options: OneShotOptions): Promise<number> {
  const query = options.query === '-' ? readFileSync(0, 'utf8') : options.query;
  if (query.trim() === '') {
    process.stderr.write('hermes: the prompt is empty. Pass text to -q, or - to read it from stdin.\n');
    return 2;
  }
  let host: AgentHost;
  try {
    host = await createCliHost();
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    return 1;
  }
  let exitCode = 1;
  const onSignal = () => agent?.interrupt({ issuer: 'user', reason: 'Ctrl-C' });
  let agent: Agent | undefined;
  try {
    agent = await openSession(host, options);
    if (options.yolo) agent.setYolo(true);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // `hermes -q "/<skill> <request>"` runs the skill, as the interactive chat does.
    const skill = await host.skills.expand(query, { cwd: agent.cwd });
    const run = agent.runTurn(skill?.input ?? { text: query });
    for await (const event of run) {
      if (event.type === 'tool.start') process.stderr.write(`→ ${event.title}\n`);
      else if (event.type === 'tool.end' && event.status !== 'completed')
        process.stderr.write(`  ${event.name}: ${event.status}\n`);
      else if (event.type === 'retry')
        process.stderr.write(`retrying (${event.reason}) in ${Math.round(event.delayMs / 1000)} s…\n`);
      else if (event.type === 'notice') process.stderr.write(`${event.text}\n`);
    }
    const result = await run.result;
    if (result.finalText !== '')
      process.stdout.write(result.finalText.endsWith('\n') ? result.finalText : `${result.finalText}\n`);
    if (result.outcome === 'failed') process.stderr.write(`hermes: ${result.error?.message ?? result.exitReason}\n`);
    if (result.outcome === 'cancelled') process.stderr.write('hermes: cancelled.\n');
    exitCode = exitCodeFor(result);
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    exitCode = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await host.close();
  }
  return exitCode;
}
