import * as z from 'zod';
import type { ClarifyAnswer, ClarifyQuestion, JsonValue } from '../types.js';
import type { ToolDefinition, ToolResult } from './types.js';

const MAX_CHOICES = 4;

const QuestionSchema = z.object({
  id: z.string().min(1).describe('Short id of the question, used as the key of its answer.'),
  question: z.string().min(1).describe('The question.'),
  choices: z
    .array(z.string())
    .max(MAX_CHOICES)
    .optional()
    .describe(`Up to ${MAX_CHOICES} suggested answers; the user may answer freely.`),
  multi_select: z.boolean().optional().describe('Allow several choices. Default false.'),
});

const ClarifyArgsSchema = z.object({
  question: z.string().min(1).optional().describe('The question to ask the user. Give either question or questions.'),
  choices: z
    .array(z.string())
    .max(MAX_CHOICES)
    .optional()
    .describe(`Up to ${MAX_CHOICES} suggested answers; the user may still answer in their own words.`),
  multi_select: z.boolean().optional().describe('Allow the user to pick several choices. Default false.'),
  questions: z
    .array(QuestionSchema)
    .min(1)
    .optional()
    .describe('Several questions asked together, each with its own id. Use instead of question.'),
});

/** Arguments of `clarify` (spec/core.md §11.8, §24.8). */
export type ClarifyArgs = z.infer<typeof ClarifyArgsSchema>;

/** The `clarify` tool (spec/core.md §11.8): asks the user when the model is blocked. */
export function createClarifyTool(): ToolDefinition<ClarifyArgs> {
  return {
    name: 'clarify',
    description: [
      'Ask the user a question and wait for the answer. Use it only when you are blocked by a decision only the user can make',
      'or by missing information you cannot find yourself; otherwise proceed and state your assumptions.',
      `Offer up to ${MAX_CHOICES} choices when the likely answers are known. Related questions can be asked together with questions.`,
    ].join(' '),
    inputSchema: ClarifyArgsSchema,
    toolset: 'interaction',
    kind: 'other',
    readOnly: false,
    interactive: true,
    available: (ctx) => ctx.hasClarify && !ctx.isSubagent,
    display(args) {
      const text = args.question ?? args.questions?.map((question) => question.question).join(' / ') ?? '';
      return { title: `Ask: ${text.split('\n', 1)[0]?.slice(0, 110) ?? ''}` };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const timeout = ctx.settings.clarifyTimeout;
      if ((args.question === undefined) === (args.questions === undefined)) {
        return { content: 'Give either question or questions (not both).', isError: true };
      }
      if (args.questions !== undefined) {
        const ids = new Set(args.questions.map((question) => question.id));
        if (ids.size !== args.questions.length) return { content: 'Each question needs a unique id.', isError: true };
        const questions: ClarifyQuestion[] = args.questions.map((question) => ({
          id: question.id,
          question: question.question,
          ...(question.choices === undefined ? {} : { choices: question.choices }),
          ...(question.multi_select === undefined ? {} : { multiSelect: question.multi_select }),
        }));
        const outcome = await ctx.clarify({
          question: questions.map((question) => question.question).join('\n'),
          questions,
        });
        if (outcome.cancelled)
          return { content: "Cancelled while waiting for the user's answers.", status: 'cancelled' };
        const answers = outcome.answers ?? {};
        const lines: string[] = [];
        const missing: string[] = [];
        for (const question of questions) {
          const answer = answers[question.id];
          if (answer === undefined || answer === null) missing.push(question.id);
          else lines.push(`- ${question.id} (${question.question}): ${answerText(answer)}`);
        }
        const parts: string[] = [];
        if (lines.length > 0) parts.push(`User answered:\n${lines.join('\n')}`);
        if (missing.length > 0) {
          parts.push(
            outcome.timedOut
              ? `No answer within ${timeout} s to: ${missing.join(', ')}. Continue with your best judgement and state the assumptions you made.`
              : `The user declined to answer: ${missing.join(', ')}.`,
          );
        }
        const structuredAnswers: Record<string, JsonValue> = {};
        for (const [id, answer] of Object.entries(answers)) structuredAnswers[id] = answer;
        return { content: parts.join('\n'), structured: { answers: structuredAnswers, timedOut: outcome.timedOut } };
      }

      const question = args.question as string;
      const outcome = await ctx.clarify({
        question,
        ...(args.choices === undefined ? {} : { choices: args.choices }),
        ...(args.multi_select === undefined ? {} : { multiSelect: args.multi_select }),
      });
      if (outcome.cancelled) return { content: "Cancelled while waiting for the user's answer.", status: 'cancelled' };
      if (outcome.timedOut) {
        return {
          content: `No answer within ${timeout} s. Continue with your best judgement and state the assumption you made.`,
          structured: { answer: null, timedOut: true },
        };
      }
      if (
        outcome.answer === null ||
        (Array.isArray(outcome.answer) && outcome.answer.length === 0) ||
        outcome.answer === ''
      ) {
        return { content: 'The user declined to answer.', structured: { answer: null, timedOut: false } };
      }
      return {
        content: `User answered: ${answerText(outcome.answer)}`,
        structured: { answer: outcome.answer, timedOut: false },
      };
    },
  };
}

function answerText(answer: Exclude<ClarifyAnswer, null>): string {
  return Array.isArray(answer) ? answer.join(', ') : answer;
}
