import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { ProviderAdapter } from './types.js';

/** The spec of the offline demo model. */
export const DEMO_MODEL_SPEC = 'demo:hermes-demo';

/**
 * Prefix of the folders the demo writes its file in and asks to delete a scratch folder from:
 * never the user's project. Each run of the demo gets a fresh folder, so its diff always shows.
 */
export const DEMO_WORKSPACE_PREFIX = join(tmpdir(), 'hermes-demo-');

type Step = { text: string; toolCall?: { name: string; input: Record<string, unknown> } };

function lastUserText(prompt: LanguageModelV3Prompt): string {
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index];
    if (message?.role === 'user') {
      return message.content
        .filter((part) => part.type === 'text')
        .map((part) => (part as { text: string }).text)
        .join(' ')
        .trim();
    }
  }
  return '';
}

/** Tool results since the last user message: how far the demo's three steps have come. */
function resultsSinceUser(prompt: LanguageModelV3Prompt): string[] {
  const names: string[] = [];
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index];
    if (!message || message.role === 'user') break;
    if (message.role === 'tool')
      for (const part of message.content) if (part.type === 'tool-result') names.unshift(part.toolName);
  }
  return names;
}

/** The demo folder of this run: the one its first step wrote to (read back from the prompt). */
function workspaceOf(prompt: LanguageModelV3Prompt): string | null {
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index];
    if (!message || message.role === 'user') break;
    if (message.role !== 'assistant') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-call' || part.toolName !== 'write_file') continue;
      const input = (typeof part.input === 'string' ? JSON.parse(part.input) : part.input) as { path?: unknown };
      if (typeof input.path === 'string') return dirname(input.path);
    }
  }
  return null;
}

/**
 * Deterministic steps that show the whole loop offline: streamed text, a file edit (a diff), a
 * command that needs approval, and a final answer that echoes the prompt.
 */
function nextStep(prompt: LanguageModelV3Prompt, toolNames: Set<string>): Step {
  const done = resultsSinceUser(prompt);
  const question = lastUserText(prompt);
  if (done.length === 0 && toolNames.has('write_file')) {
    const notes = join(mkdtempSync(DEMO_WORKSPACE_PREFIX), 'notes.md');
    return {
      text: 'Hello! I am the offline demo model of Hermes: no provider is configured yet, so I follow a fixed script. First I will write a small file, so you can see a diff.',
      toolCall: { name: 'write_file', input: { path: notes, content: `# Demo notes\n\nYou asked: ${question}\n` } },
    };
  }
  const workspace = workspaceOf(prompt);
  if (done.length === 1 && toolNames.has('terminal') && workspace !== null) {
    return {
      text: 'Now a command that deletes a folder. Dangerous commands wait for your approval.',
      toolCall: { name: 'terminal', input: { command: `rm -rf ${join(workspace, 'scratch')}` } },
    };
  }
  return {
    text: [
      '## That is the whole loop',
      '',
      '- **streaming** text, rendered as Markdown where the client can',
      '- a tool call with a **diff**',
      '- a dangerous command that waits for your **approval**',
      '',
      `You said: "${question}".`,
      '',
      'To talk to a real model, set `HERMES_MODEL` and its API key, then restart:',
      '',
      '```sh',
      'export HERMES_MODEL=anthropic:claude-sonnet-4-5',
      'export ANTHROPIC_API_KEY=...',
      '```',
      '',
      'Any OpenAI-compatible endpoint works too: set `HERMES_BASE_URL` and `HERMES_MODEL`.',
    ].join('\n'),
  };
}

function usageOf(prompt: LanguageModelV3Prompt, output: string): LanguageModelV3Usage {
  const input = Math.ceil(JSON.stringify(prompt).length / 4);
  const produced = Math.ceil(output.length / 4);
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: produced, text: produced, reasoning: 0 },
  };
}

function words(text: string): string[] {
  // Whitespace stays with the word before it, so the line breaks of the Markdown stream through.
  return text.match(/\s*\S+\s*/g) ?? [];
}

/** The offline demo language model (AI SDK LanguageModelV3). */
export function createDemoModel(): LanguageModelV3 {
  const plan = (options: LanguageModelV3CallOptions) =>
    nextStep(options.prompt, new Set((options.tools ?? []).map((tool) => tool.name)));
  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId: 'hermes-demo',
    supportedUrls: {},
    async doGenerate(options) {
      const step = plan(options);
      const content: LanguageModelV3Content[] = [{ type: 'text', text: step.text }];
      if (step.toolCall)
        content.push({
          type: 'tool-call',
          toolCallId: 'demo_call',
          toolName: step.toolCall.name,
          input: JSON.stringify(step.toolCall.input),
        });
      return {
        content,
        finishReason: { unified: step.toolCall ? 'tool-calls' : 'stop', raw: step.toolCall ? 'tool_calls' : 'stop' },
        usage: usageOf(options.prompt, step.text),
        warnings: [],
      };
    },
    async doStream(options) {
      const step = plan(options);
      const signal = options.abortSignal;
      const parts: LanguageModelV3StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 'text' },
      ];
      for (const word of words(step.text)) parts.push({ type: 'text-delta', id: 'text', delta: word });
      parts.push({ type: 'text-end', id: 'text' });
      if (step.toolCall) {
        const input = JSON.stringify(step.toolCall.input);
        parts.push({ type: 'tool-input-start', id: 'demo_call', toolName: step.toolCall.name });
        parts.push({ type: 'tool-input-delta', id: 'demo_call', delta: input });
        parts.push({ type: 'tool-input-end', id: 'demo_call' });
        parts.push({ type: 'tool-call', toolCallId: 'demo_call', toolName: step.toolCall.name, input });
      }
      parts.push({
        type: 'finish',
        finishReason: { unified: step.toolCall ? 'tool-calls' : 'stop', raw: step.toolCall ? 'tool_calls' : 'stop' },
        usage: usageOf(options.prompt, step.text),
      });
      let index = 0;
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          // A short pause between words makes the streaming visible in a terminal or a browser.
          async pull(controller) {
            if (signal?.aborted) {
              controller.error(signal.reason);
              return;
            }
            const part = parts[index];
            index += 1;
            if (!part) {
              controller.close();
              return;
            }
            if (part.type === 'text-delta') await new Promise((resolve) => setTimeout(resolve, 15));
            controller.enqueue(part);
          },
        }),
      };
    },
  };
}

/** The `demo` provider: local, no key, cost included. */
export function createDemoProvider(): ProviderAdapter {
  const model = createDemoModel();
  return { id: 'demo', local: true, requiresKey: false, create: () => model };
}
