import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkDependencyRules } from '../scripts/dependency-rules.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const broken = fileURLToPath(new URL('./fixtures/broken-workspace', import.meta.url));

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
});
