#!/usr/bin/env node
import { applyCliHeapSettings } from './heap-settings.js';

// Before the commands' modules load, so that their allocations already see them (HERMES_V8_HEAP, ADR 0078).
applyCliHeapSettings(process.env, process.execArgv);
const { createProgram } = await import('./program.js');
await (await createProgram(process.argv)).parseAsync(process.argv);
