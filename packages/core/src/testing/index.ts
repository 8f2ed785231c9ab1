/**
 * Test doubles for @hermes/core (spec/core.md §22): the scripted fake model and the scripted
 * OpenAI-compatible server. Never imported by the main entry.
 *
 * @packageDocumentation
 */
export { VERSION } from '../version.js';
