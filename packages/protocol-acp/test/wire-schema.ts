import { createRequire } from 'node:module';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';

const require = createRequire(import.meta.url);
type SchemaFile = { $defs: Record<string, Record<string, unknown>> } & Record<string, unknown>;
const unstableSchema = require('@agentclientprotocol/sdk/schema/v1/schema.unstable.json') as SchemaFile;
const stableSchema = require('@agentclientprotocol/sdk/schema/v1/schema.json') as SchemaFile;

function createValidator() {
  const ajv = new (Ajv2020 as unknown as typeof Ajv2020.default)({
    strict: false,
    allErrors: true,
    validateFormats: true,
  });
  for (const format of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'uri']) ajv.addFormat(format, true);
  ajv.addSchema({ ...unstableSchema, $id: 'unstable.json' });
  ajv.addSchema({ ...stableSchema, $id: 'stable.json' });
  return ajv;
}

const ajv = createValidator();
const cache = new Map<string, ValidateFunction>();
function validator(reference: string): ValidateFunction {
  let compiled = cache.get(reference);
  if (!compiled) {
    compiled = ajv.getSchema(reference) ?? ajv.compile({ $ref: reference });
    cache.set(reference, compiled);
  }
  return compiled;
}

/** Definitions by method and side: `<side>:<method>:<Request|Response|Notification>` → definition name. */
function definitionIndex(schema: SchemaFile): Map<string, string> {
  const index = new Map<string, string>();
  for (const [name, definition] of Object.entries(schema.$defs)) {
    const method = definition['x-method'];
    if (typeof method !== 'string') continue;
    const kind = name.endsWith('Request') ? 'Request' : name.endsWith('Response') ? 'Response' : 'Notification';
    index.set(`${method}:${kind}`, name);
  }
  return index;
}
const unstableIndex = definitionIndex(unstableSchema);
const stableIndex = definitionIndex(stableSchema);

function check(
  file: 'unstable.json' | 'stable.json',
  pointer: string,
  value: unknown,
  errors: string[],
  label: string,
) {
  const validate = validator(`${file}${pointer}`);
  if (!validate(value)) errors.push(`${label} fails ${file}${pointer}: ${ajv.errorsText(validate.errors)}`);
}

/**
 * Validates one line the agent wrote against the SDK's shipped JSON Schema (spec/acp.md §19.1):
 * the root of the unstable schema, then the definition selected by method (responses by the
 * method of the client request with the same id), and the stable schema when it defines the method.
 */
export function validateAgentLine(
  message: Record<string, unknown>,
  requestMethodOf: (id: unknown) => string | undefined,
): string[] {
  const errors: string[] = [];
  check('unstable.json', '', message, errors, 'line');
  const method = typeof message.method === 'string' ? message.method : undefined;
  const validateAgainst = (kind: string, methodName: string, value: unknown) => {
    if (methodName === 'session/set_model' && kind === 'Response') {
      // The legacy method is gone from the SDK schema; its response was an object (docs/adr/0009).
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        errors.push('session/set_model Response is not an object');
      }
      return;
    }
    const unstableName = unstableIndex.get(`${methodName}:${kind}`);
    if (unstableName) check('unstable.json', `#/$defs/${unstableName}`, value, errors, `${methodName} ${kind}`);
    else errors.push(`no schema definition for ${methodName} ${kind}`);
    const stableName = stableIndex.get(`${methodName}:${kind}`);
    if (stableName) check('stable.json', `#/$defs/${stableName}`, value, errors, `${methodName} ${kind}`);
  };
  if (method !== undefined) {
    validateAgainst('id' in message ? 'Request' : 'Notification', method, message.params ?? {});
  } else if ('error' in message) {
    check('unstable.json', '#/$defs/Error', message.error, errors, 'error');
  } else {
    const requestMethod = requestMethodOf(message.id);
    if (requestMethod === undefined) errors.push(`response to unknown request id ${JSON.stringify(message.id)}`);
    else validateAgainst('Response', requestMethod, message.result);
  }
  return errors;
}
