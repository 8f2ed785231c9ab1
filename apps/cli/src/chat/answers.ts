import type { ApprovalChoice, ApprovalRequest, ClarifyAnswer } from '@hermes/core';

/** The result of reading one answer: a value, or a hint to show before asking again. */
export type ParsedAnswer<T> = { ok: true; value: T } | { ok: false; hint: string };

const APPROVAL_WORDS: Record<ApprovalChoice, string[]> = {
  once: ['o', 'once', 'y', 'yes'],
  session: ['s', 'session'],
  always: ['a', 'always'],
  deny: ['d', 'deny', 'n', 'no'],
};

/** "[o]nce, [s]ession, [a]lways or [d]eny (default)", limited to the offered choices. */
export function approvalChoicesText(choices: ApprovalChoice[]): string {
  const labels = choices.map((choice) => `[${choice[0]}]${choice.slice(1)}`);
  return `${labels.join(', ')}${choices.includes('deny') ? ' (Enter denies)' : ''}`;
}

/**
 * What the `always` choice covers, for the line under the command (issue 32, ADR 0034): exactly
 * this command, never the whole kind of command. Null when `always` is not offered.
 */
export function alwaysScopeText(request: Pick<ApprovalRequest, 'choices' | 'alwaysScope' | 'command'>): string | null {
  if (!request.choices.includes('always')) return null;
  const scope = request.alwaysScope ?? request.command.trim();
  return `[a]lways = always allow \`${scope}\` (this exact command; /permissions lists and revokes)`;
}

/**
 * Reads an approval answer: the first letter or the whole word of an offered choice; y/n as once
 * and deny. An empty answer denies, the safe default for a dangerous command.
 */
export function parseApprovalAnswer(line: string, choices: ApprovalChoice[]): ParsedAnswer<ApprovalChoice> {
  const word = line.trim().toLowerCase();
  if (word === '' && choices.includes('deny')) return { ok: true, value: 'deny' };
  for (const choice of choices) if (APPROVAL_WORDS[choice].includes(word)) return { ok: true, value: choice };
  return { ok: false, hint: `Answer ${approvalChoicesText(choices)}.` };
}

/**
 * Reads a clarify answer. With choices, numbers pick them (several, separated by commas or spaces,
 * when `multiSelect`); any other text is a free answer. An empty answer declines (null).
 */
export function parseClarifyAnswer(line: string, choices: string[], multiSelect: boolean): ParsedAnswer<ClarifyAnswer> {
  const text = line.trim();
  if (text === '') return { ok: true, value: null };
  if (choices.length === 0) return { ok: true, value: text };
  if (/^\d+([\s,]+\d+)*$/.test(text)) {
    const numbers = text.split(/[\s,]+/).map((part) => Number.parseInt(part, 10));
    const outOfRange = numbers.find((number) => number < 1 || number > choices.length);
    if (outOfRange !== undefined) return { ok: false, hint: `Pick a number from 1 to ${choices.length}.` };
    const picked = [...new Set(numbers)].map((number) => choices[number - 1] as string);
    if (multiSelect) return { ok: true, value: picked };
    if (picked.length > 1) return { ok: false, hint: 'Pick one number.' };
    return { ok: true, value: picked[0] as string };
  }
  const exact = choices.find((choice) => choice.toLowerCase() === text.toLowerCase());
  if (exact !== undefined) return { ok: true, value: multiSelect ? [exact] : exact };
  return { ok: true, value: multiSelect ? [text] : text };
}
