import type {
  SessionConfigOption,
  SessionConfigSelectGroup,
  SessionModeState,
} from '@agentclientprotocol/sdk/unstable';
import type { ModelOption } from '@hermes/core';

/** The session modes of spec/acp.md §11.1. */
export type SessionModeId = 'default' | 'accept-edits' | 'yolo';

/** Reasoning effort values of the `reasoning_effort` option; `default` means unset. */
export type ReasoningEffortValue = 'default' | 'none' | 'low' | 'medium' | 'high';

/** The three modes, in the order they are offered. */
export const SESSION_MODES: readonly { id: SessionModeId; name: string; description: string }[] = [
  { id: 'default', name: 'Ask', description: 'Ask before file edits and dangerous commands' },
  {
    id: 'accept-edits',
    name: 'Accept edits',
    description: 'Apply edits inside the project without asking; ask before dangerous commands',
  },
  { id: 'yolo', name: 'YOLO', description: "Never ask; the core's hard blocklist still applies" },
];

/** Values of the `reasoning_effort` option, in order. */
export const REASONING_EFFORT_OPTIONS: readonly { value: ReasoningEffortValue; name: string }[] = [
  { value: 'default', name: 'Default' },
  { value: 'none', name: 'None' },
  { value: 'low', name: 'Low' },
  { value: 'medium', name: 'Medium' },
  { value: 'high', name: 'High' },
];

/** True when `value` names one of the modes. */
export function isSessionModeId(value: string): value is SessionModeId {
  return SESSION_MODES.some((mode) => mode.id === value);
}

/** The `modes` field of set-up responses. */
export function modeState(current: SessionModeId): SessionModeState {
  return {
    currentModeId: current,
    availableModes: SESSION_MODES.map((mode) => ({ id: mode.id, name: mode.name, description: mode.description })),
  };
}

/** What the config options are built from. */
export interface ConfigOptionsInput {
  mode: SessionModeId;
  /** The session's model spec, `<provider>:<model>`, or null when unknown. */
  modelSpec: string | null;
  reasoningEffort: ReasoningEffortValue;
  models: readonly ModelOption[];
}

/** Splits `<provider>:<model>` at the first colon. */
function splitSpec(spec: string): { provider: string; model: string } {
  const index = spec.indexOf(':');
  return index < 0 ? { provider: '', model: spec } : { provider: spec.slice(0, index), model: spec.slice(index + 1) };
}

/**
 * The model option's groups: configured models grouped by provider, with the current model added
 * to its provider's group when the catalogue does not list it (spec/acp.md §11.2).
 */
export function modelGroups(models: readonly ModelOption[], current: string | null): SessionConfigSelectGroup[] {
  const groups = new Map<string, SessionConfigSelectGroup>();
  const add = (provider: string, spec: string, model: string) => {
    let group = groups.get(provider);
    if (!group) {
      group = { group: provider, name: provider, options: [] };
      groups.set(provider, group);
    }
    if (!group.options.some((option) => option.value === spec)) group.options.push({ value: spec, name: model });
  };
  for (const model of models) if (model.configured) add(model.provider, model.spec, model.model);
  if (current !== null) {
    const { provider, model } = splitSpec(current);
    add(provider, current, model);
  }
  return [...groups.values()];
}

/** Every value the model option accepts. */
export function modelValues(models: readonly ModelOption[], current: string | null): string[] {
  return modelGroups(models, current).flatMap((group) => group.options.map((option) => option.value));
}

/** The complete config option list, in priority order (spec/acp.md §11.2). */
export function configOptions(input: ConfigOptionsInput): SessionConfigOption[] {
  const groups = modelGroups(input.models, input.modelSpec);
  const firstModel = groups[0]?.options[0]?.value ?? '';
  return [
    {
      id: 'mode',
      name: 'Mode',
      category: 'mode',
      type: 'select',
      currentValue: input.mode,
      options: SESSION_MODES.map((mode) => ({ value: mode.id, name: mode.name })),
    },
    {
      id: 'model',
      name: 'Model',
      category: 'model',
      type: 'select',
      currentValue: input.modelSpec ?? firstModel,
      options: groups,
    },
    {
      id: 'reasoning_effort',
      name: 'Reasoning effort',
      category: 'thought_level',
      type: 'select',
      currentValue: input.reasoningEffort,
      options: REASONING_EFFORT_OPTIONS.map((option) => ({ value: option.value, name: option.name })),
    },
  ];
}

/** The legacy `models` state of set-up responses (`session/set_model` clients such as acpx read it). */
export interface LegacyModelState {
  currentModelId: string;
  availableModels: { modelId: string; name: string }[];
}

/** The `models` field, derived from the `model` config option so both always agree. */
export function modelState(options: readonly SessionConfigOption[]): LegacyModelState {
  const option = options.find((candidate) => candidate.id === 'model');
  if (option?.type !== 'select') return { currentModelId: '', availableModels: [] };
  const availableModels = option.options.flatMap((entry) =>
    'group' in entry
      ? entry.options.map((choice) => ({ modelId: choice.value, name: choice.value }))
      : [{ modelId: entry.value, name: entry.value }],
  );
  return { currentModelId: String(option.currentValue), availableModels };
}
