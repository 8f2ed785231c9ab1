import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkDependencyRules } from '../scripts/dependency-rules.js';
import { checkImportLayers } from '../scripts/import-layers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const broken = fileURLToPath(new URL('./fixtures/broken-workspace', import.meta.url));
/** dependency-cruiser parses every file of a package with the TypeScript compiler: seconds, not milliseconds. */
const CRUISE_TIMEOUT_MS = 120_000;

describe('dependency rules of docs/architecture.md', () => {
  it('the workspace breaks no rule', () => {
    expect(checkDependencyRules(root)).toEqual([]);
  });

  it('a workspace that breaks every rule is reported rule by rule', () => {
    const violations = checkDependencyRules(broken);
    const rules = (name: string) =>
      violations
        .filter((violation) => violation.packageName === name)
        .map((violation) => violation.rule)
        .sort();
    expect(rules('@hermes/core')).toEqual(['core-is-standalone', 'core-is-standalone']);
    expect(rules('@hermes/protocol-tui')).toEqual([
      'core-is-an-optional-peer',
      'core-root-entry-only',
      'protocols-are-independent',
      'protocols-are-independent',
      'wire-is-standalone',
    ]);
    expect(rules('@hermes/client-sdk')).toEqual([
      'client-sdk-wire-only',
      'client-sdk-wire-only',
      'client-sdk-wire-only',
      'client-sdk-wire-only',
      'nothing-imports-an-app',
      'nothing-imports-an-app',
    ]);
  });

  it(
    "the core's folders import downward only, in the layer order of packages/core/.dependency-cruiser.cjs",
    async () => {
      expect(await checkImportLayers(join(root, 'packages/core'))).toEqual([]);
    },
    CRUISE_TIMEOUT_MS,
  );

  it(
    'a core whose folders import upward or sideways is reported import by import',
    async () => {
      const violations = await checkImportLayers(join(broken, 'packages/core'));
      expect(violations.map(({ rule, from, to }) => ({ rule, from, to }))).toEqual([
        { rule: 'capabilities-below-agent', from: 'src/tools/upward.ts', to: 'src/agent/loop.ts' },
        { rule: 'capabilities-siblings-independent', from: 'src/tools/sibling.ts', to: 'src/providers/provider.ts' },
        { rule: 'commands-below-agent', from: 'src/commands/upward.ts', to: 'src/agent/loop.ts' },
        { rule: 'no-circular', from: 'src/agent/loop.ts', to: 'src/agent/steps.ts' },
      ]);
    },
    CRUISE_TIMEOUT_MS,
  );
});
