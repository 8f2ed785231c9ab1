import type { z } from 'zod';
import { isPlainObject } from './merge.js';
import { PROTOCOL_OWNED_SECTIONS } from './schema.js';

/*
 * A walk of the raw YAML guided by the zod schema, before validation. It collects unknown keys
 * (spec/core.md §4.2: kept and ignored, one warning each) and drops `null` where the schema does not
 * accept it, because a YAML section whose children are all commented out (`agent:`) parses as null
 * and means "use the defaults", not "invalid".
 */

type AnySchema = z.ZodType;

interface SchemaDefinition {
  type: string;
  innerType?: AnySchema;
  in?: AnySchema;
  valueType?: AnySchema;
  element?: AnySchema;
  shape?: Record<string, AnySchema>;
}

function definitionOf(schema: AnySchema): SchemaDefinition {
  return (schema as unknown as { def: SchemaDefinition }).def;
}

/** Strips defaults, optionals and nullables; reports whether null is an accepted value on the way. */
function unwrap(schema: AnySchema): { core: AnySchema; nullable: boolean } {
  let current = schema;
  let nullable = false;
  for (;;) {
    const definition = definitionOf(current);
    if (definition.type === 'nullable') nullable = true;
    if (
      (definition.type === 'default' ||
        definition.type === 'prefault' ||
        definition.type === 'optional' ||
        definition.type === 'nullable') &&
      definition.innerType !== undefined
    ) {
      current = definition.innerType;
      continue;
    }
    if (definition.type === 'pipe' && definition.in !== undefined) {
      current = definition.in;
      continue;
    }
    return { core: current, nullable };
  }
}

function joinPath(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

/** Result of {@link normalizeRawConfig}. */
export interface NormalizedConfig {
  /** The raw value with schema-rejected nulls removed; unknown keys are still present. */
  value: unknown;
  /** Dotted paths of keys the schema does not know, in document order. */
  unknownKeys: string[];
}

/** Walks `raw` against `schema`; see the module comment. */
export function normalizeRawConfig(raw: unknown, schema: AnySchema): NormalizedConfig {
  const unknownKeys: string[] = [];

  const walk = (value: unknown, node: AnySchema, path: string): unknown => {
    const definition = definitionOf(unwrap(node).core);
    if (definition.type === 'object' && isPlainObject(value)) {
      const shape = (unwrap(node).core as unknown as { shape: Record<string, AnySchema> }).shape;
      const result: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) {
        const childSchema = shape[key];
        if (childSchema === undefined) {
          const isProtocolSection = path === '' && PROTOCOL_OWNED_SECTIONS.includes(key);
          if (!isProtocolSection) unknownKeys.push(joinPath(path, key));
          result[key] = child;
          continue;
        }
        if (child === null && !unwrap(childSchema).nullable) continue;
        result[key] = walk(child, childSchema, joinPath(path, key));
      }
      return result;
    }
    if (definition.type === 'record' && isPlainObject(value) && definition.valueType !== undefined) {
      const valueSchema = definition.valueType;
      const result: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) {
        // An entry written as a bare key (`tools:` under a server) is an empty mapping, not an error.
        const entry = child === null && definitionOf(unwrap(valueSchema).core).type === 'object' ? {} : child;
        result[key] = walk(entry, valueSchema, joinPath(path, key));
      }
      return result;
    }
    return value;
  };

  return { value: walk(raw, schema, ''), unknownKeys };
}
