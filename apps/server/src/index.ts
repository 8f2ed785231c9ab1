/**
 * @hermes/server: the HTTP API and the gateway WebSocket on one port, for deployment.
 *
 * @packageDocumentation
 */
export { createDemoModel, createDemoProvider, DEMO_MODEL_SPEC, DEMO_WORKSPACE_PREFIX } from '@hermes/core';
export { type RunningServer, StartupRefused, startServer } from './server.js';
export { clientAddress, isLoopback, readServerSettings, type ServerSettings } from './settings.js';
export { VERSION } from './version.js';
