import { HermesError } from '../errors.js';
import type { ToolDefinition, ToolRegistry } from './types.js';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Creates the host's tool registry. Names must match `^[A-Za-z0-9_-]{1,64}$` and be unique;
 * `list()` returns the tools in registration order.
 */
export function createToolRegistry(): ToolRegistry {
  const tools = new Map<string, ToolDefinition>();
  return {
    register(definition) {
      if (!TOOL_NAME.test(definition.name)) {
        throw new HermesError(
          'invalid_input',
          `Invalid tool name "${definition.name}": it must match ^[A-Za-z0-9_-]{1,64}$`,
        );
      }
      if (tools.has(definition.name)) {
        throw new HermesError('invalid_input', `A tool named "${definition.name}" is already registered`);
      }
      tools.set(definition.name, definition);
    },
    unregister(name) {
      tools.delete(name);
    },
    get(name) {
      return tools.get(name);
    },
    list() {
      // Availability per session (clarify, delegate_task, MCP tools) is decided by each
      // definition's `available`, which the agent applies with the session's context.
      return [...tools.values()];
    },
  };
}
