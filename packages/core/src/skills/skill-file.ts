import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { yamlErrorMessage } from '../config/load.js';
import type { Skill, SkillSource } from './types.js';

/** File name of a skill inside its directory. */
export const SKILL_FILE_NAME = 'SKILL.md';
/** Category of a skill that names none. */
export const DEFAULT_SKILL_CATEGORY = 'general';

const FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/**
 * Turns a skill name into its slash command: lower case, spaces to `-`, anything but letters
 * (any script), digits, `_` and `-` removed, runs of `-` collapsed. Returns '' when nothing is left.
 */
export function skillCommandName(name: string): string {
  return name
    .toLowerCase()
    .replace(/\s+/g, '-')
    .replace(/[^\p{L}\p{N}_-]/gu, '')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** A parsed SKILL.md, or the reason it cannot be used. */
export type ParsedSkillFile =
  | { ok: true; frontmatter: Record<string, unknown>; body: string }
  | { ok: false; reason: string };

/** Splits a SKILL.md into its YAML frontmatter (parsed with `yaml`) and its Markdown body. */
export function parseSkillFile(text: string): ParsedSkillFile {
  const match = FRONTMATTER.exec(text);
  if (!match) return { ok: false, reason: 'missing YAML frontmatter (the file must start with a line "---")' };
  const source = match[1] ?? '';
  const document = YAML.parseDocument(source, { prettyErrors: false });
  const firstError = document.errors[0];
  if (firstError !== undefined)
    return { ok: false, reason: `invalid YAML frontmatter: ${yamlErrorMessage(firstError, source)}` };
  const value: unknown = document.toJS();
  if (value === null || value === undefined) return { ok: true, frontmatter: {}, body: text.slice(match[0].length) };
  if (typeof value !== 'object' || Array.isArray(value))
    return { ok: false, reason: 'the frontmatter must be a YAML mapping' };
  return { ok: true, frontmatter: value as Record<string, unknown>, body: text.slice(match[0].length) };
}

function firstParagraphLine(body: string): string {
  for (const line of body.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed !== '' && !trimmed.startsWith('#')) return trimmed;
  }
  return '';
}

function stringList(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}

/** Builds a {@link Skill} from a SKILL.md's text, or the reason it is skipped. */
export function skillFromText(
  text: string,
  location: { path: string; directory: string; category: string | null; source: SkillSource },
): { skill: Skill } | { reason: string } {
  const parsed = parseSkillFile(text);
  if (!parsed.ok) return { reason: parsed.reason };
  const { frontmatter, body } = parsed;
  const rawName = frontmatter.name ?? path.basename(location.directory);
  if (typeof rawName !== 'string' || rawName.trim() === '') return { reason: '"name" must be a non-empty string' };
  const name = rawName.trim();
  const command = skillCommandName(name);
  if (command === '') return { reason: `the name "${name}" has no letter or digit to make a command from` };
  const rawDescription = frontmatter.description;
  if (rawDescription !== undefined && typeof rawDescription !== 'string')
    return { reason: '"description" must be a string' };
  const rawCategory = frontmatter.category;
  const category =
    location.category ?? (typeof rawCategory === 'string' && rawCategory.trim() !== '' ? rawCategory.trim() : null);
  return {
    skill: {
      name,
      command,
      description: (rawDescription ?? '').trim() || firstParagraphLine(body),
      category: category ?? DEFAULT_SKILL_CATEGORY,
      tags: stringList(frontmatter.tags),
      source: location.source,
      path: location.path,
      directory: location.directory,
      body: body.trim(),
      frontmatter,
    },
  };
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

async function subdirectories(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true });
  const names: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) names.push(entry.name);
    else if (entry.isSymbolicLink()) {
      try {
        if ((await stat(path.join(directory, entry.name))).isDirectory()) names.push(entry.name);
      } catch {
        // a dangling link is not a skill
      }
    }
  }
  return names.sort();
}

/**
 * Reads every skill under one skills directory: `<dir>/<name>/SKILL.md`, and one level of
 * categories, `<dir>/<category>/<name>/SKILL.md`. A missing directory has no skills. A file that
 * cannot be read or parsed is skipped with a warning; nothing here throws.
 */
export async function scanSkillsDirectory(
  root: string,
  source: SkillSource,
): Promise<{ skills: Skill[]; warnings: string[] }> {
  const skills: Skill[] = [];
  const warnings: string[] = [];
  let top: string[];
  try {
    top = await subdirectories(root);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR')
      warnings.push(`${root}: cannot read the skills directory: ${String(error)}`);
    return { skills, warnings };
  }
  const load = async (directory: string, category: string | null) => {
    const file = path.join(directory, SKILL_FILE_NAME);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      warnings.push(`${file}: skipped: cannot read the file: ${(error as Error).message}`);
      return;
    }
    const result = skillFromText(text, { path: file, directory, category, source });
    if ('reason' in result) warnings.push(`${file}: skipped: ${result.reason}`);
    else skills.push(result.skill);
  };
  for (const name of top) {
    const directory = path.join(root, name);
    if (await isFile(path.join(directory, SKILL_FILE_NAME))) {
      await load(directory, null);
      continue;
    }
    let nested: string[];
    try {
      nested = await subdirectories(directory);
    } catch {
      continue;
    }
    for (const child of nested) {
      const childDirectory = path.join(directory, child);
      if (await isFile(path.join(childDirectory, SKILL_FILE_NAME))) await load(childDirectory, name);
    }
  }
  return { skills, warnings };
}
