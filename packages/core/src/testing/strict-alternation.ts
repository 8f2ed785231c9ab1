/**
 * The alternation rule a strict provider enforces (spec/core.md §7.4), checked by the scripted doubles.
 */

/**
 * How strictly a scripted double checks alternation.
 *
 * - `true`: a `user` message may not follow a `user` or a `tool` message. This is the rule of a strict
 *   OpenAI-compatible endpoint, for which the core appends user text (steer, redirect, model-switch marker) to the
 *   content of the last tool result instead of sending a user message after it (spec/core.md §7.4).
 * - `'user-only'`: only two consecutive `user` messages are a violation; a `user` message after `tool` messages is
 *   allowed. This is the rule at the AI SDK prompt level for Anthropic, whose provider folds tool results and the
 *   user text that follows them into one user turn.
 * - `false` / absent: no check.
 *
 * System (and developer) messages are skipped: they neither break nor continue a run of user turns.
 */
export type StrictAlternationRule = boolean | 'user-only';

/**
 * Returns a description of the first alternation violation in `messages` (AI SDK prompt messages or OpenAI chat
 * messages: both carry a `role`), or undefined when the messages comply with `rule`.
 */
export function findAlternationViolation(
  messages: readonly unknown[],
  rule: StrictAlternationRule,
): string | undefined {
  if (rule === false) return undefined;
  let previousRole: string | undefined;
  let previousIndex = -1;
  for (const [index, message] of messages.entries()) {
    const role =
      typeof message === 'object' && message !== null && 'role' in message && typeof message.role === 'string'
        ? message.role
        : undefined;
    if (role === undefined || role === 'system' || role === 'developer') continue;
    if (role === 'user' && (previousRole === 'user' || (rule === true && previousRole === 'tool'))) {
      return (
        `Strict alternation violated: message ${index} (user) directly follows message ${previousIndex} ` +
        `(${previousRole}); a strict-alternation provider rejects two consecutive user-role turns ` +
        '(spec/core.md §7.4).'
      );
    }
    previousRole = role;
    previousIndex = index;
  }
  return undefined;
}
