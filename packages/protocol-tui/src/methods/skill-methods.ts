import type { AgentHost, Skill, SkillScope } from '@hermes/core';
import { ErrorCode } from '../wire/index.js';
import { fail, integerParam, type MethodContext, stringParam } from './context.js';

/** The project scope of a call: the working directory of the live session it names, if any. */
export function skillScope(context: MethodContext): SkillScope {
  const id = stringParam(context.params, 'session_id');
  const session = id ? context.gateway.sessions.get(id) : undefined;
  return session ? { cwd: session.agent.cwd } : {};
}

function summary(skill: Skill) {
  return { name: skill.name, description: skill.description };
}

/** The skill part of `commands.catalog` (§4.8): its pairs, the `skills` map and any discovery warning. */
export async function skillCatalog(context: MethodContext) {
  const { skills, warnings } = await context.gateway.host.skills.snapshot(skillScope(context));
  const pairs: [string, string][] = skills.map((skill) => [`/${skill.command}`, skill.description]);
  const map: Record<string, { usage: string; origin: 'local' }> = {};
  for (const skill of skills) map[`/${skill.command}`] = { usage: `/${skill.command} [request]`, origin: 'local' };
  const warning =
    warnings.length === 0
      ? undefined
      : `${warnings.length} skill file(s) skipped: ${warnings[0]}${warnings.length > 1 ? ' (see the gateway log for the rest)' : ''}`;
  return { pairs, skills: map, skill_count: skills.length, ...(warning ? { warning } : {}) };
}

/** `command.dispatch` stage 2 (§4.8): the skill directive of `/<name> <arg>`, or null. */
export async function skillDirective(
  context: MethodContext,
  name: string,
  arg: string,
): Promise<Record<string, unknown> | null> {
  const skills = await context.gateway.host.skills.list(skillScope(context));
  const skill = skills.find((candidate) => candidate.command === name);
  if (!skill) return null;
  const invocation = context.gateway.host.skills.invocation(skill, arg);
  return { type: 'skill', name: skill.name, message: invocation.message, display: invocation.display };
}

/** True when `name` is a skill command visible to the call (`slash.exec` refuses those). */
export async function isSkillCommand(context: MethodContext, name: string): Promise<boolean> {
  const skills = await context.gateway.host.skills.list(skillScope(context));
  return skills.some((skill) => skill.command === name);
}

const PAGE_SIZE = 20;

/**
 * `skills.manage`: the installed skills (`list`, `search`, `browse`, `inspect`). This host has no
 * skills hub, so `install` answers `installed: false` with the reason.
 */
export async function skillsManage(context: MethodContext): Promise<Record<string, unknown>> {
  const action = stringParam(context.params, 'action') ?? 'list';
  const query = (stringParam(context.params, 'query') ?? '').trim();
  const registry = context.gateway.host.skills;
  const skills = await registry.list(skillScope(context));
  switch (action) {
    case 'list': {
      const grouped: Record<string, string[]> = {};
      for (const skill of skills) grouped[skill.category] = [...(grouped[skill.category] ?? []), skill.name];
      return { skills: grouped };
    }
    case 'search': {
      const needle = query.toLowerCase();
      const hits = skills.filter((skill) =>
        [skill.name, skill.command, skill.description, ...skill.tags].some((field) =>
          field.toLowerCase().includes(needle),
        ),
      );
      return { results: hits.map(summary) };
    }
    case 'browse': {
      const pageSize = Math.max(1, Math.min(integerParam(context.params, 'page_size') ?? PAGE_SIZE, 100));
      const fromQuery = /^\d+$/.test(query) ? Number(query) : undefined;
      const totalPages = Math.max(1, Math.ceil(skills.length / pageSize));
      const page = Math.min(Math.max(1, integerParam(context.params, 'page') ?? fromQuery ?? 1), totalPages);
      const items = skills.slice((page - 1) * pageSize, page * pageSize).map((skill) => ({
        ...summary(skill),
        source: skill.source === 'project' ? 'project' : 'local',
        trust: 'local',
        identifier: skill.command,
      }));
      return { items, page, total_pages: totalPages, total: skills.length };
    }
    case 'inspect': {
      if (query === '') fail(ErrorCode.invalidValue, 'query is required: the name of an installed skill');
      const skill = await registry.find(query, skillScope(context));
      if (!skill) return { info: {} };
      return {
        info: {
          ...summary(skill),
          source: skill.source === 'project' ? 'project' : 'local',
          identifier: skill.command,
          tags: skill.tags,
          skill_md_preview: skill.body.slice(0, 2000),
        },
      };
    }
    case 'install':
      return {
        installed: false,
        name: query,
        message: `this host has no skills hub: put the skill in ${registry.homeSkillsDir}/<name>/SKILL.md, then reload the skills`,
      };
    default:
      fail(
        ErrorCode.invalidValue,
        `unknown skills action: ${action} (expected list, search, browse, inspect or install)`,
      );
  }
}

/** `skills.reload`: rescans the skill folders and reports what changed. */
export async function skillsReload(context: MethodContext): Promise<Record<string, unknown>> {
  let result: Awaited<ReturnType<AgentHost['skills']['reload']>>;
  try {
    result = await context.gateway.host.skills.reload(skillScope(context));
  } catch (error) {
    fail(ErrorCode.reloadFailed, `skills reload failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const lines = [`Reloaded skills: ${result.total} available.`];
  if (result.added.length > 0) lines.push(`Added: ${result.added.map((skill) => skill.name).join(', ')}`);
  if (result.removed.length > 0) lines.push(`Removed: ${result.removed.map((skill) => skill.name).join(', ')}`);
  for (const warning of result.warnings) lines.push(`Skipped: ${warning}`);
  const { warnings: _warnings, ...diff } = result;
  return { output: lines.join('\n'), result: diff };
}
