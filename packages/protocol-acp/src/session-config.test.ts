import { describe, expect, it } from 'vitest';
import { configOptions, modelGroups, modeState } from './session-config.js';

const models = [
  { spec: 'scripted:model-a', provider: 'scripted', model: 'model-a', contextWindow: 1000, configured: true },
  { spec: 'other:x', provider: 'other', model: 'x', contextWindow: 1000, configured: false },
];

describe('session config', () => {
  it('groups configured models by provider and adds a current model the catalogue lacks', () => {
    expect(modelGroups(models, 'scripted:model-z')).toEqual([
      {
        group: 'scripted',
        name: 'scripted',
        options: [
          { value: 'scripted:model-a', name: 'model-a' },
          { value: 'scripted:model-z', name: 'model-z' },
        ],
      },
    ]);
  });

  it('lists mode, model and reasoning effort in priority order, agreeing with the modes', () => {
    const options = configOptions({ mode: 'yolo', modelSpec: 'scripted:model-a', reasoningEffort: 'default', models });
    expect(options.map((option) => [option.id, option.category, option.currentValue])).toEqual([
      ['mode', 'mode', 'yolo'],
      ['model', 'model', 'scripted:model-a'],
      ['reasoning_effort', 'thought_level', 'default'],
    ]);
    expect(modeState('yolo').currentModeId).toBe('yolo');
    expect(modeState('yolo').availableModes.map((mode) => mode.id)).toEqual(['default', 'accept-edits', 'yolo']);
  });
});
