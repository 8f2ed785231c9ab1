export type { HermesConfig as HermesSettings } from '../config/index.js';
