import type { Agent, CommandDef, CommandRegistry, CommandResult, SessionOptions } from '../api/types.js';
import { formatUsd } from '../providers/index.js';
import type { JsonValue } from '../types.js';
import { helpText } from './help.js';

/**
 * What the built-in commands read beyond the public interfaces: every Agent and AgentHost the core
 * creates has these members (agent/ implements them), so commands need not import agent/.
 */
interface InternalAgent extends Agent {
  readonly source: string;
  activeTools(): { name: string }[];
}

interface InternalHost {
  toolsForSession(sessionId: string): { name: string; toolset: string }[];
}

function usageText(agent: Agent): { text: string; data: JsonValue } {
  const usage = agent.usage();
  const session = usage.session;
  const text = [
    `Input tokens: ${session.inputTokens} (cache read ${session.cacheReadTokens}, cache write ${session.cacheWriteTokens})`,
    `Output tokens: ${session.outputTokens} (reasoning ${session.reasoningTokens})`,
    `API calls: ${session.apiCalls}`,
    `Cost: ${formatUsd(usage.costUsd)} (${usage.costStatus})`,
    `Context: ${usage.context.estimatedTokens} / ${usage.context.contextWindow} tokens (${Math.round(usage.context.ratio * 100)}%)`,
  ].join('\n');
  return { text, data: JSON.parse(JSON.stringify(usage)) as JsonValue };
}

/** The fifteen commands of spec/core.md §16, and `/permissions` (docs/adr/0034). */
export function builtinCommands(registry: () => CommandRegistry): CommandDef[] {
  return [
    {
      name: 'model',
      description: 'Show the current model and the available ones, or switch (add --global to make it the default).',
      argsHint: '[provider:model] [--global]',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent, host }, args) {
        if (args === '') {
          const models = host.listModels();
          const current = agent.model ? agent.model.spec : '(none configured)';
          const text = [
            `Current model: ${current}`,
            '',
            'Available:',
            ...models.map((model) => `- ${model.spec}${model.configured ? '' : ' (not configured)'}`),
          ].join('\n');
          return { kind: 'text', text, data: { current: agent.model, models } as unknown as JsonValue };
        }
        const global = /(^|\s)--global(\s|$)/.test(args);
        const spec = args.replace(/(^|\s)--global(\s|$)/, ' ').trim();
        const result = await agent.switchModel(spec, { persist: global ? 'global' : 'session' });
        if (!result.ok)
          return {
            kind: 'error',
            text: result.error?.message ?? 'The model could not be switched.',
            data: { code: result.error?.code ?? 'invalid_model_spec' },
          };
        const when = result.appliesFrom === 'next_turn' ? ' from the next turn' : '';
        return {
          kind: 'text',
          text: `Model switched to ${result.to?.spec}${when}.`,
          data: result as unknown as JsonValue,
        };
      },
    },
    {
      name: 'new',
      aliases: ['reset'],
      description: 'End this session and start a new one with the same source, directory and model.',
      argsHint: '[title]',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ agent, host }, args) {
        const options: SessionOptions = { source: (agent as InternalAgent).source, cwd: agent.cwd };
        if (agent.model) options.model = agent.model.spec;
        if (args !== '') options.title = args;
        const next = await host.newSession(options);
        await agent.close({ endReason: 'new_session' });
        return { kind: 'session', agent: next, text: 'Started a new session.' };
      },
    },
    {
      name: 'resume',
      description: 'List recent sessions, or resume one by id or title.',
      argsHint: '[id or title]',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ host }, args) {
        if (args === '') {
          const page = await host.store.listSessions({ limit: 10 });
          const text = page.items.length
            ? page.items
                .map((session) => `- ${session.id}  ${session.title ?? '(untitled)'}  ${session.preview}`)
                .join('\n')
            : 'No sessions yet.';
          return { kind: 'text', text, data: page.items as unknown as JsonValue };
        }
        const next = await host.resumeSession(args);
        return { kind: 'session', agent: next, text: `Resumed ${next.sessionId}.` };
      },
    },
    {
      name: 'retry',
      description: 'Undo the last turn and run its input again.',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ agent }) {
        const turn = await agent.retry();
        return { kind: 'turn', turn };
      },
    },
    {
      name: 'undo',
      description: 'Remove the last turn from the conversation.',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ agent }) {
        const result = await agent.undo();
        if (result.removedUserText === null)
          return { kind: 'text', text: 'Nothing to undo.', data: { removedUserText: null, removed: 0 } };
        return {
          kind: 'text',
          text: `Removed the last turn (${result.removed.length} messages).`,
          data: { removedUserText: result.removedUserText, removed: result.removed.length },
        };
      },
    },
    {
      name: 'compress',
      description: 'Summarize older messages to free context.',
      argsHint: '[focus]',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ agent }, args) {
        const result = await agent.compress(args === '' ? { force: true } : { force: true, focus: args });
        if (!result.ok) {
          const why = result.skipped
            ? `skipped (${result.skipped})`
            : `failed: ${result.error?.message ?? 'unknown error'}`;
          return {
            kind: result.skipped ? 'text' : 'error',
            text: `Compression ${why}.`,
            data: result as unknown as JsonValue,
          };
        }
        return {
          kind: 'text',
          text: `Compressed ${result.archivedRows} messages: ${result.tokensBefore} → ${result.tokensAfter} tokens.`,
          data: result as unknown as JsonValue,
        };
      },
    },
    {
      name: 'title',
      description: 'Show or set the session title.',
      argsHint: '[text]',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent }, args) {
        if (args === '') return { kind: 'text', text: agent.title() ?? '(untitled)', data: { title: agent.title() } };
        const title = await agent.setTitle(args);
        return { kind: 'text', text: `Title set to "${title}".`, data: { title } };
      },
    },
    {
      name: 'usage',
      description: 'Show token use and cost of this session.',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent }) {
        return { kind: 'text', ...usageText(agent) };
      },
    },
    {
      name: 'steer',
      description: 'Add guidance to the running turn; it reaches the model after the current tools.',
      argsHint: '<text>',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent }, args) {
        const result = agent.steer(args);
        if (result.status === 'rejected') {
          const why =
            result.reason === 'no_active_turn'
              ? 'no turn is running'
              : result.reason === 'empty'
                ? 'the text is empty'
                : 'the session is closed';
          const rejected: CommandResult = {
            kind: 'error',
            text: `Steer rejected: ${why}.`,
            data: { code: result.reason ?? 'rejected' },
          };
          return rejected;
        }
        const queued: CommandResult = { kind: 'text', text: 'Steer queued.', data: { status: result.status } };
        return queued;
      },
    },
    {
      name: 'stop',
      description: "Stop the running turn and kill this session's background processes.",
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent, host }) {
        const stopped = agent.interrupt({ issuer: 'user', reason: 'stop', hard: true });
        const processes = host.processes.list(agent.sessionId).filter((entry) => entry.status === 'running').length;
        await host.processes.killSession(agent.sessionId);
        return {
          kind: 'text',
          text: stopped ? 'Stopped.' : 'Nothing was running.',
          data: { stopped, killedProcesses: processes },
        };
      },
    },
    {
      name: 'tools',
      description: 'List tools by toolset, or enable or disable a tool or toolset for this session.',
      argsHint: '[list | enable <name> | disable <name>]',
      scope: 'core',
      allowedWhileBusy: (args) => args === '' || args === 'list',
      async handler({ agent, host }, args) {
        const [action = 'list', name = ''] = args.split(/\s+/, 2);
        if (action === 'enable' || action === 'disable') {
          if (name === '') return { kind: 'error', text: `Usage: /tools ${action} <name>` };
          agent.setToolEnabled(name, action === 'enable');
          return { kind: 'text', text: `${name} ${action === 'enable' ? 'enabled' : 'disabled'} for this session.` };
        }
        if (action !== 'list') return { kind: 'error', text: 'Usage: /tools [list | enable <name> | disable <name>]' };
        const active = new Set((agent as InternalAgent).activeTools().map((tool) => tool.name));
        const all = (host as unknown as InternalHost).toolsForSession(agent.sessionId);
        const byToolset = new Map<string, { name: string; enabled: boolean }[]>();
        for (const tool of all) {
          const list = byToolset.get(tool.toolset) ?? [];
          list.push({ name: tool.name, enabled: active.has(tool.name) });
          byToolset.set(tool.toolset, list);
        }
        const text = [...byToolset.entries()]
          .map(
            ([toolset, tools]) =>
              `${toolset}: ${tools.map((tool) => `${tool.name}${tool.enabled ? '' : ' (off)'}`).join(', ')}`,
          )
          .join('\n');
        return { kind: 'text', text, data: Object.fromEntries(byToolset) as unknown as JsonValue };
      },
    },
    {
      name: 'help',
      description: 'List the commands.',
      scope: 'core',
      allowedWhileBusy: true,
      async handler() {
        return { kind: 'text', ...helpText(registry()) };
      },
    },
    {
      name: 'branch',
      aliases: ['fork'],
      description: 'Copy this conversation into a new session and switch to it.',
      argsHint: '[title]',
      scope: 'core',
      allowedWhileBusy: false,
      async handler({ agent }, args) {
        const next = await agent.branch(args === '' ? {} : { title: args });
        return { kind: 'session', agent: next, text: `Branched into ${next.sessionId}.` };
      },
    },
    {
      name: 'queue',
      description: 'Queue a message to send when the current turn ends.',
      argsHint: '<text>',
      scope: 'ui',
      allowedWhileBusy: true,
    },
    {
      name: 'permissions',
      aliases: ['allowlist'],
      description:
        'List the commands approved with "always", revoke one, or allow a whole class of commands on purpose.',
      argsHint: '[list | revoke <number> | allow-class <pattern_key>]',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ host }, args): Promise<CommandResult> {
        const [action = 'list', operand = ''] = args.trim() === '' ? [] : args.trim().split(/\s+/, 2);
        if (action === 'revoke') {
          const listing = host.commandAllowlist();
          const picked = listing[Number(operand) - 1];
          if (!/^\d+$/.test(operand) || picked === undefined)
            return { kind: 'error', text: `Usage: /permissions revoke <number from 1 to ${listing.length}>` };
          const removed = await host.revokeCommands(picked.entry);
          return {
            kind: 'text',
            text: `Revoked: ${picked.description}.`,
            data: { revoked: picked.entry as unknown as JsonValue, removed },
          };
        }
        if (action === 'allow-class') {
          if (operand === '') return { kind: 'error', text: 'Usage: /permissions allow-class <pattern_key>' };
          try {
            await host.allowCommands({ pattern: operand });
          } catch (error) {
            return { kind: 'error', text: error instanceof Error ? error.message : String(error) };
          }
          return { kind: 'text', text: `Every command of the class \`${operand}\` now runs without asking.` };
        }
        if (action !== 'list')
          return { kind: 'error', text: 'Usage: /permissions [list | revoke <number> | allow-class <pattern_key>]' };
        const listing = host.commandAllowlist();
        const text =
          listing.length === 0
            ? 'No command is allowed permanently.'
            : listing.map((item, index) => `${index + 1}. ${item.description}`).join('\n');
        return { kind: 'text', text, data: { entries: listing as unknown as JsonValue } };
      },
    },
    {
      name: 'status',
      description: 'Show the session, model, directory, phase and context use.',
      scope: 'core',
      allowedWhileBusy: true,
      async handler({ agent }): Promise<CommandResult> {
        const status = agent.status();
        const usage = agent.usage();
        const text = [
          `Session: ${status.sessionId}${status.title ? ` (${status.title})` : ''}`,
          `Model: ${status.model?.spec ?? '(none configured)'}`,
          `Directory: ${status.cwd}`,
          `Phase: ${status.phase}${status.busy ? ` (iteration ${status.iteration}/${status.maxIterations})` : ''}`,
          `Context: ${usage.context.estimatedTokens} / ${usage.context.contextWindow} tokens`,
          status.pendingSteer ? `Pending steer: ${status.pendingSteer}` : '',
        ]
          .filter(Boolean)
          .join('\n');
        return { kind: 'text', text, data: { ...status, context: usage.context } as unknown as JsonValue };
      },
    },
  ];
}
