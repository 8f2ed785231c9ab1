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
    "protocol-tui's modules import downward only, in the layer order of packages/protocol-tui/.dependency-cruiser.cjs",
    async () => {
      expect(await checkImportLayers(join(root, 'packages/protocol-tui'))).toEqual([]);
    },
    CRUISE_TIMEOUT_MS,
  );

  it(
    'a gateway whose modules import upward, in a cycle or from outside the layer list is reported import by import',
    async () => {
      const violations = await checkImportLayers(join(broken, 'packages/protocol-tui'));
      expect(violations.map(({ rule, from, to }) => ({ rule, from, to }))).toEqual([
        { rule: 'every-module-has-a-layer', from: 'src/stray.ts', to: 'src/methods/handler.ts' },
        { rule: 'method-tables-on-top', from: 'src/methods/handler.ts', to: 'src/methods/tui-client-table.ts' },
        { rule: 'methods-below-dispatch', from: 'src/methods/context.ts', to: 'src/gateway-core.ts' },
        { rule: 'no-circular', from: 'src/gateway-core.ts', to: 'src/methods/context.ts' },
        { rule: 'session-below-methods', from: 'src/live-session.ts', to: 'src/methods/context.ts' },
        { rule: 'wire-below-session', from: 'src/wire/upward.ts', to: 'src/live-session.ts' },
      ]);
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
