import { type AgentHost, formatUsd, type StoredMessage } from '@hermes/core';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';

async function withHost(action: (host: AgentHost) => Promise<number | undefined>): Promise<void> {
  let host: AgentHost | undefined;
  try {
    host = await createCliHost({ connectMcp: false });
    process.exitCode = (await action(host)) ?? 0;
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    process.exitCode = 1;
  } finally {
    await host?.close();
  }
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16);
}

function markdownOf(title: string, rows: StoredMessage[]): string {
  const parts = [`# ${title}`, ''];
  for (const row of rows) {
    if (row.role === 'tool') parts.push(`**tool ${row.toolName ?? ''}**\n\n\`\`\`\n${row.content}\n\`\`\``, '');
    else {
      const calls = (row.toolCalls ?? []).map((call) => `- calls \`${call.name}\` ${call.arguments}`).join('\n');
      parts.push(
        `**${row.role}**${row.displayKind ? ` (${row.displayKind})` : ''}\n\n${row.content}${calls ? `\n\n${calls}` : ''}`,
        '',
      );
    }
  }
  return parts.join('\n');
}

/** Registers `hermes sessions list | show | search | export | delete`. */
export function registerSessionsCommand(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('List, show, search, export and delete stored sessions')
    .addHelpText(
      'after',
      `
Examples:
  $ hermes sessions list --limit 10
  $ hermes sessions show "Refactor the parser"
  $ hermes sessions search "migration AND sqlite"
  $ hermes sessions export 20261130_024553_3fa9c1 --format md > chat.md
  $ hermes sessions delete 20261130_024553_3fa9c1`,
    );

  sessions
    .command('list')
    .description('Recent sessions, newest activity first')
    .option('-n, --limit <count>', 'how many to list', '20')
    .option('--all', 'include hidden and subagent sessions')
    .option('--json', 'print JSON')
    .action((options: { limit: string; all?: boolean; json?: boolean }) =>
      withHost(async (host) => {
        const query: Parameters<AgentHost['store']['listSessions']>[0] = { limit: Number(options.limit) || 20 };
        if (options.all) {
          query.includeHidden = true;
          query.kinds = ['root', 'branch', 'subagent'];
        }
        const page = await host.store.listSessions(query);
        if (options.json) {
          process.stdout.write(`${JSON.stringify(page.items, null, 2)}\n`);
          return 0;
        }
        if (page.items.length === 0) process.stdout.write('No sessions yet. Start one with `hermes -q "…"`.\n');
        for (const item of page.items) {
          process.stdout.write(
            `${item.id}  ${when(item.lastActivityAt)}  ${String(item.messageCount).padStart(4)} msgs  ${item.title ?? item.preview.slice(0, 60)}\n`,
          );
        }
        return 0;
      }),
    );

  sessions
    .command('show <idOrTitle>')
    .description('Print a session transcript')
    .action((idOrTitle: string) =>
      withHost(async (host) => {
        const row = await host.store.resolveSession(idOrTitle);
        if (!row) {
          process.stderr.write(`hermes: no session with id or title "${idOrTitle}". Run \`hermes sessions list\`.\n`);
          return 1;
        }
        const rows = await host.store.loadConversation(row.id);
        process.stdout.write(
          `${row.title ?? row.id}  (${row.model ?? 'no model'}, ${row.inputTokens + row.outputTokens} tokens, ${formatUsd(row.estimatedCostUsd)})\n\n`,
        );
        process.stdout.write(`${markdownOf(row.title ?? row.id, rows)}\n`);
        return 0;
      }),
    );

  sessions
    .command('search <query>')
    .description('Full-text search over every session')
    .option('-n, --limit <count>', 'how many hits', '20')
    .action((query: string, options: { limit: string }) =>
      withHost(async (host) => {
        const hits = await host.store.search(query, { limit: Number(options.limit) || 20 });
        if (hits.length === 0) process.stdout.write('No matches.\n');
        for (const hit of hits) {
          process.stdout.write(
            `${hit.sessionId}  ${hit.session.title ?? ''}  [${hit.role}]  ${hit.snippet.replace(/\s+/g, ' ')}\n`,
          );
        }
        return 0;
      }),
    );

  sessions
    .command('export <idOrTitle>')
    .description('Print a session as JSON (default) or Markdown')
    .option('--format <format>', 'json or md', 'json')
    .action((idOrTitle: string, options: { format: string }) =>
      withHost(async (host) => {
        const row = await host.store.resolveSession(idOrTitle);
        if (!row) {
          process.stderr.write(`hermes: no session with id or title "${idOrTitle}".\n`);
          return 1;
        }
        const rows = await host.store.loadConversation(row.id);
        if (options.format === 'md') process.stdout.write(`${markdownOf(row.title ?? row.id, rows)}\n`);
        else process.stdout.write(`${JSON.stringify({ session: row, messages: rows }, null, 2)}\n`);
        return 0;
      }),
    );

  sessions
    .command('delete <idOrTitle>')
    .description('Delete a session and its messages')
    .action((idOrTitle: string) =>
      withHost(async (host) => {
        const row = await host.store.resolveSession(idOrTitle);
        if (!row) {
          process.stderr.write(`hermes: no session with id or title "${idOrTitle}".\n`);
          return 1;
        }
        await host.store.deleteSession(row.id);
        process.stderr.write(`Deleted ${row.id}.\n`);
        return 0;
      }),
    );
}
