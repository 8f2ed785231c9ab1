export {
  buildSkillMessage,
  createSkillRegistry,
  findProjectSkillsDir,
  PROJECT_SKILLS_PATH,
  type SkillRegistryOptions,
  skillsByCategory,
} from './registry.js';
export {
  DEFAULT_SKILL_CATEGORY,
  parseSkillFile,
  SKILL_FILE_NAME,
  scanSkillsDirectory,
  skillCommandName,
} from './skill-file.js';
export { createSkillTools, PROMPT_SKILL_LIMIT, SKILLS_TOOLSET, skillsPromptLayer } from './skill-tools.js';
export type * from './types.js';
