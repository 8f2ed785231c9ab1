/**
 * Configuration of @hermes/core (spec/core.md §4): HERMES_HOME, config.yaml, `.env`, environment
 * mappings and comment-preserving writes.
 *
 * @packageDocumentation
 */
export {
  environmentOverrides,
  isSecretVariableName,
  SECRET_VARIABLES,
  secretValues,
  type VariableLookup,
} from './environment.js';
export {
  CONFIG_FILE_NAME,
  configFilePath,
  DOTENV_FILE_NAME,
  dotenvFilePath,
  type Environment,
  ensureHomeDir,
  resolveHomeDir,
} from './home.js';
export { createLookup, type LoadConfigOptions, type LoadedConfig, loadConfig, parseConfigText } from './load.js';
export {
  DEFAULT_PROTECTED_PATHS,
  DEFAULT_TOOLSETS,
  DEFAULT_WRITE_DENYLIST,
  defaultConfig,
  type HermesConfig,
  hermesConfigSchema,
  type McpServerConfig,
  mcpServerProblem,
  PROTOCOL_OWNED_SECTIONS,
  type PricingConfig,
  type ProviderConfig,
  REASONING_EFFORTS,
  type ReasoningEffort,
} from './schema.js';
export {
  appendCommandAllowlist,
  setDefaultModel,
  updateConfigFile,
  writeDotenvValue,
  writeFileAtomicSync,
} from './write.js';
