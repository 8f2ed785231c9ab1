/**
 * Scripted answers for the core's injected callbacks (approve, clarify…), spec/core.md §22.2.
 */
import { systemClock } from '../clock.js';
import type { Clock } from '../types.js';
import { abortReason, waitForAbort } from './script.js';

/** One queued answer: a value, a value after a delay on the clock, or `'never'` (left unanswered until aborted). */
export type ScriptedAnswer<T> = T | { delayMs: number; value: T } | 'never';

/** A queue of answers and the callback that hands them out. */
export interface ScriptedAnswers<T> {
  /**
   * Queues answers, used in order. `'never'` always means "never answer", even when `T` includes strings: to answer
   * the text "never", queue `{ delayMs: 0, value: 'never' }`.
   */
  answer(...answers: ScriptedAnswer<T>[]): void;
  /** Every request the callback received, in order. */
  readonly requests: unknown[];
  /** Answers queued and not yet used. */
  readonly remaining: number;
  /**
   * The callback to install: takes the next queued answer, or the default when the queue is empty. It rejects with
   * the signal's reason when the signal aborts before the answer is given.
   */
  readonly callback: (request: unknown, signal?: AbortSignal) => Promise<T>;
}

/** Options of `createScriptedAnswers`. */
export interface ScriptedAnswersOptions {
  /** Clock for `{ delayMs }` answers; real timers when absent. */
  clock?: Clock;
}

function isDelayed<T>(answer: ScriptedAnswer<T>): answer is { delayMs: number; value: T } {
  return (
    typeof answer === 'object' &&
    answer !== null &&
    'delayMs' in answer &&
    'value' in answer &&
    typeof answer.delayMs === 'number' &&
    Object.keys(answer).length === 2
  );
}

/** Creates a queue of scripted answers whose empty queue answers `defaultAnswer`. */
export function createScriptedAnswers<T>(defaultAnswer: T, options: ScriptedAnswersOptions = {}): ScriptedAnswers<T> {
  const clock = options.clock ?? systemClock;
  const queue: ScriptedAnswer<T>[] = [];
  const requests: unknown[] = [];
  const callback = async (request: unknown, signal?: AbortSignal): Promise<T> => {
    requests.push(request);
    const answer = queue.length > 0 ? (queue.shift() as ScriptedAnswer<T>) : defaultAnswer;
    if (signal?.aborted) throw abortReason(signal);
    if (answer === 'never') return waitForAbort(signal);
    if (isDelayed(answer)) {
      await clock.sleep(answer.delayMs, signal);
      return answer.value;
    }
    return answer;
  };
  return {
    answer: (...answers) => {
      queue.push(...answers);
    },
    requests,
    get remaining() {
      return queue.length;
    },
    callback,
  };
}
