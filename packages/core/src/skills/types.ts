import type { TurnInput } from '../turn-types.js';

/** Where a skill was found: HERMES_HOME/skills or a project's `.hermes/skills`. */
export type SkillSource = 'home' | 'project';

/** One installed skill: a `SKILL.md` with YAML frontmatter and a Markdown body. */
export interface Skill {
  /** The `name` frontmatter field, else the skill's directory name. */
  name: string;
  /** The slash command that invokes the skill, without `/`: the name slugged (`Foo Bar` → `foo-bar`). */
  command: string;
  description: string;
  /** The category directory the skill sits in (`skills/<category>/<name>/SKILL.md`), else the `category` field, else `general`. */
  category: string;
  tags: string[];
  source: SkillSource;
  /** Absolute path of the SKILL.md file. */
  path: string;
  /** Absolute path of the skill's directory (relative paths in the body resolve against it). */
  directory: string;
  /** The Markdown after the frontmatter. */
  body: string;
  /** The whole parsed frontmatter mapping. */
  frontmatter: Record<string, unknown>;
}

/** The skills visible from one working directory, with the problems found while loading them. */
export interface SkillSnapshot {
  skills: Skill[];
  /** One line per skipped file or shadowed name; never fatal. */
  warnings: string[];
}

/** A skill command typed by a user, expanded into the message the model receives. */
export interface SkillInvocation {
  skill: Skill;
  /** The text after `/<command>`, trimmed. */
  arg: string;
  /** The model-facing message: the skill's instructions and the user's instruction. */
  message: string;
  /** What the user typed, for display (`/<command> <arg>`). */
  display: string;
  /** Input for `agent.runTurn`: the expanded message, stored with `display_text` = `display`. */
  input: TurnInput;
}

/** What a rescan changed. */
export interface SkillReloadResult {
  added: { name: string; description: string }[];
  removed: { name: string; description: string }[];
  unchanged: string[];
  total: number;
  commands: number;
  warnings: string[];
}

/** Options naming the working directory whose project skills apply. */
export interface SkillScope {
  /** A session working directory; project skills come from `.hermes/skills` in it or an ancestor up to the repository root. */
  cwd?: string | undefined;
}

/** The host's skill registry (issue 16.2). Files are read once per directory and cached until {@link SkillRegistry.reload}. */
export interface SkillRegistry {
  /** HERMES_HOME/skills. */
  readonly homeSkillsDir: string;
  /** Home skills merged with the project skills of `cwd` (project wins on a command clash), sorted by command. */
  snapshot(scope?: SkillScope): Promise<SkillSnapshot>;
  /** The snapshot of `scope` when its folders have been read already, without touching the disk; else undefined. */
  peek(scope?: SkillScope): SkillSnapshot | undefined;
  list(scope?: SkillScope): Promise<Skill[]>;
  /** Looks a skill up by command or name (leading `/` allowed, case-insensitive). */
  find(name: string, scope?: SkillScope): Promise<Skill | undefined>;
  /**
   * Expands `/<command> <arg>` when the command is an installed skill's and not a built-in
   * command; otherwise null.
   */
  expand(line: string, scope?: SkillScope): Promise<SkillInvocation | null>;
  /** Builds the invocation of a known skill with an argument. */
  invocation(skill: Skill, arg: string): SkillInvocation;
  /** Forgets every cached directory and rescans; the result compares against the previous scan. */
  reload(scope?: SkillScope): Promise<SkillReloadResult>;
  /** Calls `listener` after every {@link SkillRegistry.reload}; returns the unsubscribe function. */
  onReload(listener: () => void): () => void;
}
