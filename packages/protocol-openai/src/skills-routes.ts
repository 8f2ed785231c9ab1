import type { Hono } from 'hono';
import type { ServerContext } from './server-context.js';

const TOOLSET_DESCRIPTIONS: Record<string, string> = {
  file: 'Read, write, patch and search files',
  terminal: 'Run shell commands and manage background processes',
  web: 'Fetch web pages',
  interaction: 'Ask the user questions and keep a todo list',
  delegation: 'Hand tasks to child agents',
  mcp: 'Tools contributed by MCP servers',
};

/**
 * `GET /v1/skills` and `GET /v1/toolsets` (spec §24, issue 16.2), each `{"object":"list","data":[…]}`.
 * Skills are those of HERMES_HOME/skills and the server's working directory's project; a skill's
 * file path stays on the server. Behind the API key like every non-open route.
 */
export function registerSkillRoutes(app: Hono, server: ServerContext): void {
  const { host } = server;

  app.get('/v1/skills', async (context) => {
    const skills = await host.skills.list({ cwd: process.cwd() });
    return context.json({
      object: 'list',
      data: skills.map((skill) => ({
        object: 'skill',
        id: skill.command,
        name: skill.name,
        description: skill.description,
        category: skill.category,
        tags: skill.tags,
        source: skill.source,
        command: `/${skill.command}`,
      })),
    });
  });

  app.get('/v1/toolsets', (context) => {
    const enabled = new Set(host.config.toolsets);
    const disabledTools = new Set(host.config.tools.disabled);
    const byToolset = new Map<string, string[]>();
    for (const name of host.config.toolsets) byToolset.set(name, []);
    for (const tool of host.tools.list())
      byToolset.set(tool.toolset, [...(byToolset.get(tool.toolset) ?? []), tool.name]);
    const mcpServers = host.mcp.status();
    if (mcpServers.length > 0 && !byToolset.has('mcp')) byToolset.set('mcp', []);
    const data = [...byToolset.entries()]
      .sort(([left], [right]) => left.localeCompare(right))
      .map(([name, tools]) => {
        const isMcp = name === 'mcp';
        return {
          object: 'toolset',
          id: name,
          name,
          description: TOOLSET_DESCRIPTIONS[name] ?? '',
          enabled: enabled.has(name),
          tools: tools.sort().map((tool) => ({ name: tool, enabled: enabled.has(name) && !disabledTools.has(tool) })),
          tool_count: isMcp ? mcpServers.reduce((sum, status) => sum + status.toolCount, 0) : tools.length,
          ...(isMcp
            ? {
                servers: mcpServers.map((status) => ({
                  name: status.name,
                  state: status.state,
                  tool_count: status.toolCount,
                })),
              }
            : {}),
        };
      });
    return context.json({ object: 'list', data });
  });
}
