import { stat } from 'node:fs/promises';
import path from 'node:path';
import { parseCommandLine } from '../command-line.js';
import type { Logger } from '../types.js';
import { scanSkillsDirectory } from './skill-file.js';
import type { Skill, SkillInvocation, SkillRegistry, SkillReloadResult, SkillScope, SkillSnapshot } from './types.js';

/** The project folder that holds skills: `<project>/.hermes/skills`. */
export const PROJECT_SKILLS_PATH = path.join('.hermes', 'skills');

async function exists(file: string, kind: 'directory' | 'any'): Promise<boolean> {
  try {
    const info = await stat(file);
    return kind === 'any' || info.isDirectory();
  } catch {
    return false;
  }
}

/**
 * Finds the project skills directory of a working directory: `.hermes/skills` in `cwd` or the
 * nearest ancestor that has one, looking no higher than the repository root (the first ancestor
 * with `.git`). `exclude` (HERMES_HOME/skills) is never a project directory.
 */
export async function findProjectSkillsDir(cwd: string, exclude: string): Promise<string | null> {
  let directory = path.resolve(cwd);
  for (;;) {
    const candidate = path.join(directory, PROJECT_SKILLS_PATH);
    if (path.resolve(candidate) !== path.resolve(exclude) && (await exists(candidate, 'directory'))) return candidate;
    if (await exists(path.join(directory, '.git'), 'any')) return null;
    const parent = path.dirname(directory);
    if (parent === directory) return null;
    directory = parent;
  }
}

/**
 * The message the model receives for `/<command> <arg>`: the skill's instructions, where its
 * files are, and what the user asked alongside the invocation. Every surface builds it here.
 */
export function buildSkillMessage(skill: Skill, arg: string): string {
  const parts = [
    `[The user invoked the skill "${skill.name}" (/${skill.command}). Follow the skill's instructions below for this request.]`,
    '',
    skill.body,
    '',
    `[Skill directory: ${skill.directory}. Paths in the skill are relative to it.]`,
  ];
  if (arg !== '') parts.push('', `User request: ${arg}`);
  return parts.join('\n');
}

/** Options of {@link createSkillRegistry}. */
export interface SkillRegistryOptions {
  /** HERMES_HOME/skills. */
  homeSkillsDir: string;
  /** True when a name is a built-in slash command, which a skill never shadows. */
  isBuiltinCommand?: (name: string) => boolean;
  logger?: Logger;
}

type Scan = { skills: Skill[]; warnings: string[] };

/** Creates the skill registry of a host (issue 16.2). */
export function createSkillRegistry(options: SkillRegistryOptions): SkillRegistry {
  const homeSkillsDir = path.resolve(options.homeSkillsDir);
  const isBuiltin = options.isBuiltinCommand ?? (() => false);
  const scans = new Map<string, Promise<Scan>>();
  const projectDirs = new Map<string, Promise<string | null>>();
  const logged = new Set<string>();

  // Settled results, for the synchronous `peek`.
  const settledScans = new Map<string, Scan>();
  const settledProjectDirs = new Map<string, string | null>();
  let generation = 0;
  const reloadListeners = new Set<() => void>();

  const scan = (directory: string, source: Skill['source']): Promise<Scan> => {
    let pending = scans.get(directory);
    if (!pending) {
      const started = generation;
      pending = scanSkillsDirectory(directory, source).then((result) => {
        if (started === generation) settledScans.set(directory, result);
        return result;
      });
      scans.set(directory, pending);
    }
    return pending;
  };

  const projectDirOf = (cwd: string): Promise<string | null> => {
    const key = path.resolve(cwd);
    let pending = projectDirs.get(key);
    if (!pending) {
      const started = generation;
      pending = findProjectSkillsDir(key, homeSkillsDir).then((found) => {
        if (started === generation) settledProjectDirs.set(key, found);
        return found;
      });
      projectDirs.set(key, pending);
    }
    return pending;
  };

  const snapshot = async (scope: SkillScope = {}): Promise<SkillSnapshot> => {
    const home = await scan(homeSkillsDir, 'home');
    const projectDir = scope.cwd !== undefined ? await projectDirOf(scope.cwd) : null;
    const project = projectDir ? await scan(projectDir, 'project') : { skills: [], warnings: [] };
    return merge(home, project);
  };

  const peek = (scope: SkillScope = {}): SkillSnapshot | undefined => {
    const home = settledScans.get(homeSkillsDir);
    if (!home) return undefined;
    if (scope.cwd === undefined) return merge(home, { skills: [], warnings: [] });
    const key = path.resolve(scope.cwd);
    if (!settledProjectDirs.has(key)) return undefined;
    const projectDir = settledProjectDirs.get(key) ?? null;
    if (projectDir === null) return merge(home, { skills: [], warnings: [] });
    const project = settledScans.get(projectDir);
    return project ? merge(home, project) : undefined;
  };

  const merge = (home: Scan, project: Scan): SkillSnapshot => {
    const warnings = [...home.warnings, ...project.warnings];
    const byCommand = new Map<string, Skill>();
    const add = (skill: Skill, overrides: boolean) => {
      const previous = byCommand.get(skill.command);
      if (previous && !overrides) {
        warnings.push(`${skill.path}: skipped: /${skill.command} is already defined by ${previous.path}`);
        return;
      }
      byCommand.set(skill.command, skill);
    };
    for (const skill of home.skills) add(skill, false);
    const projectCommands = new Set<string>();
    for (const skill of project.skills) {
      if (projectCommands.has(skill.command)) {
        add(skill, false);
        continue;
      }
      projectCommands.add(skill.command);
      add(skill, true);
    }
    const skills: Skill[] = [];
    for (const skill of byCommand.values()) {
      if (isBuiltin(skill.command)) {
        warnings.push(`${skill.path}: skipped: /${skill.command} is a built-in command`);
        continue;
      }
      skills.push(skill);
    }
    skills.sort((left, right) => left.command.localeCompare(right.command));
    for (const warning of warnings) {
      if (logged.has(warning)) continue;
      logged.add(warning);
      options.logger?.warn('skill not loaded', { detail: warning });
    }
    return { skills, warnings };
  };

  const find = async (name: string, scope?: SkillScope): Promise<Skill | undefined> => {
    const wanted = name.replace(/^\//, '').toLowerCase();
    const { skills } = await snapshot(scope);
    return (
      skills.find((skill) => skill.command === wanted) ?? skills.find((skill) => skill.name.toLowerCase() === wanted)
    );
  };

  const invocation = (skill: Skill, arg: string): SkillInvocation => {
    const trimmed = arg.trim();
    const display = trimmed === '' ? `/${skill.command}` : `/${skill.command} ${trimmed}`;
    const message = buildSkillMessage(skill, trimmed);
    return {
      skill,
      arg: trimmed,
      message,
      display,
      input: { text: message, persistAs: { displayMetadata: { display_text: display } } },
    };
  };

  return {
    homeSkillsDir,
    snapshot,
    peek,
    list: async (scope) => (await snapshot(scope)).skills,
    find,
    invocation,
    async expand(line, scope) {
      const parsed = parseCommandLine(line);
      if (!parsed || isBuiltin(parsed.name)) return null;
      const skill = (await snapshot(scope)).skills.find((candidate) => candidate.command === parsed.name);
      return skill ? invocation(skill, parsed.args) : null;
    },
    onReload(listener) {
      reloadListeners.add(listener);
      return () => {
        reloadListeners.delete(listener);
      };
    },
    async reload(scope): Promise<SkillReloadResult> {
      const before = (await snapshot(scope)).skills;
      generation += 1;
      scans.clear();
      projectDirs.clear();
      settledScans.clear();
      settledProjectDirs.clear();
      logged.clear();
      const after = await snapshot(scope);
      // Surfaces that advertise skills (ACP sessions, for example) announce the new list.
      for (const listener of [...reloadListeners]) {
        try {
          listener();
        } catch (error) {
          options.logger?.warn('a skills reload listener failed', { error: String(error) });
        }
      }
      const beforeByCommand = new Map(before.map((skill) => [skill.command, skill]));
      const afterCommands = new Set(after.skills.map((skill) => skill.command));
      const summary = (skill: Skill) => ({ name: skill.name, description: skill.description });
      return {
        added: after.skills.filter((skill) => !beforeByCommand.has(skill.command)).map(summary),
        removed: before.filter((skill) => !afterCommands.has(skill.command)).map(summary),
        unchanged: after.skills.filter((skill) => beforeByCommand.has(skill.command)).map((skill) => skill.name),
        total: after.skills.length,
        commands: after.skills.length,
        warnings: after.warnings,
      };
    },
  };
}

/** Groups skills as `category → names`, the shape of the gateway's `info.skills`. */
export function skillsByCategory(skills: readonly Skill[]): Record<string, string[]> {
  const grouped: Record<string, string[]> = {};
  for (const skill of skills) {
    const names = grouped[skill.category] ?? [];
    names.push(skill.name);
    grouped[skill.category] = names;
  }
  for (const names of Object.values(grouped)) names.sort();
  return grouped;
}
