import type { UsageEntry } from '../store/types.js';
import { auxiliaryText } from './auxiliary.js';
import type { SessionInternals } from './internals.js';
import { startsTurn } from './transcript.js';

/** Cleans a generated title: one line, no quotes, no trailing punctuation, at most 60 characters. */
export function cleanTitle(raw: string): string {
  let title = raw.split('\n').find((line) => line.trim() !== '') ?? '';
  title = title
    .replace(/^title:\s*/i, '')
    .replace(/["'`“”‘’*#]/g, '')
    .trim();
  title = title.replace(/[.!?,;:]+$/, '').trim();
  if (title.length > 60) title = cutAtWord(title, 60);
  return title;
}

function cutAtWord(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const cut = text.slice(0, limit);
  const space = cut.lastIndexOf(' ');
  return (space > limit / 2 ? cut.slice(0, space) : cut).trim();
}

/** A title derived from the first user message: the first 50 characters at a word boundary. */
export function deriveTitle(firstMessage: string): string {
  const collapsed = firstMessage.replace(/\s+/g, ' ').trim();
  return cutAtWord(collapsed, 50).replace(/[.!?,;:]+$/, '');
}

/**
 * Auto-titling after the first completed turn (spec/core.md §19): the auxiliary model writes a
 * 3-to-7-word title; on failure the title is derived from the first user message.
 */
export async function generateTitle(agent: SessionInternals): Promise<void> {
  const firstUser = agent.transcript.find(startsTurn);
  if (!firstUser) return;
  const answer = [...agent.transcript].reverse().find((row) => row.role === 'assistant' && row.content.trim() !== '');
  let title = '';
  let source: 'llm' | 'derived' = 'llm';
  // The title call's usage is stored with the title, in one write (ADR 0056).
  const usage: UsageEntry[] = [];
  try {
    const text = await auxiliaryText(
      agent,
      'title',
      [
        {
          role: 'system',
          content:
            'Write a title for this conversation: 3 to 7 words, at most 60 characters, no quotes, no trailing punctuation. Reply with the title only.',
        },
        {
          role: 'user',
          content: [
            {
              type: 'text',
              text: `User: ${firstUser.content.slice(0, 2000)}\n\nAssistant: ${(answer?.content ?? '').slice(0, 2000)}`,
            },
          ],
        },
      ],
      { maxOutputTokens: 40, onUsage: (entry) => usage.push(entry) },
    );
    title = cleanTitle(text);
  } catch (error) {
    agent.host.logger.debug('title generation failed; deriving the title', { error: String(error) });
  }
  if (title === '') {
    title = deriveTitle(firstUser.content);
    source = 'derived';
  }
  await agent.applyGeneratedTitle(title, source, usage);
}
