/**
 * Test doubles for @hermes/core (spec/core.md §22): the scripted fake model, the scripted
 * OpenAI-compatible server, the fake clock, scripted answers and the test host. Never imported by
 * the main entry.
 *
 * @packageDocumentation
 */
export * from './doubles.js';
export { createTestHost, type TestHost, type TestHostOptions } from './test-host.js';
