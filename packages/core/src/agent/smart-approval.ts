import { auxiliaryText } from './auxiliary.js';
import type { SessionInternals } from './internals.js';

/**
 * The `smart` approval mode (spec/core.md §12.2): the auxiliary model rates the command. Clearly
 * low risk approves, clearly dangerous denies; anything else, including a failure, asks the user.
 */
export async function smartVerdict(
  agent: SessionInternals,
  command: string,
  descriptions: string[],
  signal: AbortSignal,
): Promise<'approve' | 'deny' | 'ask'> {
  try {
    const text = await auxiliaryText(
      agent,
      'approval',
      [
        {
          role: 'system',
          content:
            'You review shell commands an AI agent wants to run. Answer with exactly one word: LOW if the command is clearly low risk in a development context, HIGH if it is clearly dangerous or destructive, UNSURE otherwise.',
        },
        {
          role: 'user',
          content: [{ type: 'text', text: `Command:\n${command}\n\nFlagged because: ${descriptions.join('; ')}` }],
        },
      ],
      { signal, maxOutputTokens: 5 },
    );
    const verdict = text.trim().toUpperCase();
    if (verdict.startsWith('LOW')) return 'approve';
    if (verdict.startsWith('HIGH')) return 'deny';
    return 'ask';
  } catch {
    return 'ask';
  }
}
