import * as z from 'zod';
import type { ToolDefinition, ToolResult } from '../tools/types.js';
import type { Skill, SkillRegistry } from './types.js';

/** The toolset of the skill tools (issue 16.2: skills the model can see and load). */
export const SKILLS_TOOLSET = 'skills';

/** At most this many skills are listed in the system prompt; `skills_list` shows the rest. */
export const PROMPT_SKILL_LIMIT = 50;
const DESCRIPTION_LIMIT = 200;

/** One line of the skills index: `- name: description`. */
function indexLine(skill: Pick<Skill, 'name' | 'description'>): string {
  const description = skill.description.replace(/\s+/g, ' ').trim();
  const short =
    description.length > DESCRIPTION_LIMIT ? `${description.slice(0, DESCRIPTION_LIMIT - 1)}…` : description;
  return short ? `- ${skill.name}: ${short}` : `- ${skill.name}`;
}

/**
 * The "Skills" layer of the system prompt: the installed skills by name and description, and how to
 * load one. Null when there are none, so sessions without skills get the prompt they had before.
 */
export function skillsPromptLayer(skills: readonly Pick<Skill, 'name' | 'description'>[]): string | null {
  if (skills.length === 0) return null;
  const shown = skills.slice(0, PROMPT_SKILL_LIMIT).map(indexLine);
  const more = skills.length - shown.length;
  return [
    'Skills are instructions for particular tasks, installed by the user. When a task matches a skill, call `skill_view` with its name and follow the instructions it returns before you start.',
    '',
    ...shown,
    ...(more > 0 ? [`- … and ${more} more: call \`skills_list\` to see them all.`] : []),
  ].join('\n');
}

const SkillsListArgs = z.object({
  category: z.string().optional().describe('Only the skills of this category.'),
});

const SkillViewArgs = z.object({
  name: z.string().min(1).describe('The name of the skill (or its slash command), as `skills_list` shows it.'),
});

/** A session sees skills only after its folders were scanned: the agent scans them when it builds its prompt. */
function hasSkills(registry: SkillRegistry, cwd: string | undefined): boolean {
  const snapshot = registry.peek(cwd === undefined ? {} : { cwd });
  return (snapshot?.skills.length ?? 0) > 0;
}

/**
 * `skills_list` and `skill_view` (toolset `skills`): the model lists the skills installed in
 * HERMES_HOME/skills and the project's `.hermes/skills`, and reads one's SKILL.md body. Offered only
 * to sessions that can see at least one skill.
 */
export function createSkillTools(registry: SkillRegistry): ToolDefinition[] {
  const list: ToolDefinition<z.infer<typeof SkillsListArgs>> = {
    name: 'skills_list',
    description:
      'List the skills installed for this session: name, category and description. Load one with skill_view.',
    inputSchema: SkillsListArgs,
    toolset: SKILLS_TOOLSET,
    kind: 'read',
    readOnly: true,
    available: (ctx) => hasSkills(registry, ctx.cwd),
    display: () => ({ title: 'List the installed skills' }),
    async execute(args, ctx): Promise<ToolResult> {
      const skills = await registry.list({ cwd: ctx.cwd });
      const category = args.category?.trim().toLowerCase();
      const chosen = category ? skills.filter((skill) => skill.category.toLowerCase() === category) : skills;
      const rows = chosen.map((skill) => ({
        name: skill.name,
        category: skill.category,
        description: skill.description,
      }));
      if (rows.length === 0)
        return { content: category ? `No skills in category "${args.category}".` : 'No skills are installed.' };
      return {
        content: rows.map((row) => `${indexLine(row)} [${row.category}]`).join('\n'),
        structured: { skills: rows },
      };
    },
  };
  const view: ToolDefinition<z.infer<typeof SkillViewArgs>> = {
    name: 'skill_view',
    description:
      "Load a skill: returns its SKILL.md instructions. Call it when the user's task matches a listed skill, then follow them.",
    inputSchema: SkillViewArgs,
    toolset: SKILLS_TOOLSET,
    kind: 'read',
    readOnly: true,
    available: (ctx) => hasSkills(registry, ctx.cwd),
    display: (args) => ({ title: `Load the skill ${args.name}` }),
    async execute(args, ctx): Promise<ToolResult> {
      const skill = await registry.find(args.name, { cwd: ctx.cwd });
      if (!skill) {
        const names = (await registry.list({ cwd: ctx.cwd })).map((entry) => entry.name);
        return {
          content: `No skill named "${args.name}". Installed skills: ${names.length > 0 ? names.join(', ') : 'none'}.`,
          status: 'failed',
        };
      }
      return {
        content: [
          `# Skill: ${skill.name}`,
          `Directory: ${skill.directory} (relative paths in the skill resolve against it)`,
          '',
          skill.body.trim(),
        ].join('\n'),
        structured: { name: skill.name, category: skill.category, path: skill.path },
      };
    },
  };
  return [list as ToolDefinition, view as ToolDefinition];
}
