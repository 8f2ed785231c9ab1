import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext } from './context.js';

/**
 * The display settings the Hermes TUI reads and writes through `config.get` / `config.set`
 * (issue 16.1): `full` returns the sections it applies at start (`display.*`, approvals, voice,
 * paste thresholds); the other keys map onto `display.*` in config.yaml. Features this host lacks
 * (skins, fast mode, personalities) answer 4090 on write and their default on read.
 */

const DETAILS_MODES = ['hidden', 'collapsed', 'expanded'];
const DETAILS_SECTIONS = ['thinking', 'tools', 'subagents', 'activity'];
const THEMES = ['auto', 'light', 'dark'];
const INDICATORS = ['kaomoji', 'emoji', 'unicode', 'ascii'];
const STATUS_BAR = ['top', 'bottom', 'off'];
/** The values of the client-side `/density` command the catalog offers (persisted as `display.tui_density`). */
const DENSITIES = ['comfortable', 'compact'];

function section(context: MethodContext, name: string): Record<string, unknown> {
  const value = context.gateway.host.configSection(name);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

/** `config.get` for the TUI's keys; undefined for keys it does not own. */
export function displayConfigGet(context: MethodContext, key: string): Record<string, unknown> | undefined {
  const display = section(context, 'display');
  switch (key) {
    case 'full': {
      const config: Record<string, unknown> = {
        display,
        approvals: section(context, 'approvals'),
        voice: section(context, 'voice'),
      };
      for (const name of ['paste_collapse_threshold', 'paste_collapse_char_threshold']) {
        const value = context.gateway.host.configSection(name);
        if (value !== undefined) config[name] = value;
      }
      return { config };
    }
    case 'theme':
      return { value: stringOr(display.tui_theme, 'auto') };
    case 'indicator':
      return { value: stringOr(display.tui_status_indicator, 'kaomoji') };
    case 'details_mode':
      return { value: stringOr(display.details_mode, 'collapsed') };
    case 'density':
      return { value: stringOr(display.tui_density, 'comfortable') };
    case 'skin':
      return { value: 'default' };
    case 'fast':
      return { value: 'normal' };
    default:
      return undefined;
  }
}

function onOff(value: unknown): boolean | null {
  if (value === true || value === 'on' || value === 'true') return true;
  if (value === false || value === 'off' || value === 'false') return false;
  return null;
}

/** `config.set` for the TUI's keys; undefined for keys it does not own. */
export async function displayConfigSet(
  context: MethodContext,
  key: string,
  value: unknown,
): Promise<Record<string, unknown> | undefined> {
  const invalid = (): never =>
    fail(
      ErrorCode.invalidValue,
      `invalid value for ${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
    );
  const persist = async (path: string[], stored: unknown) => {
    try {
      await context.gateway.persistConfig(path, stored);
    } catch (error) {
      fail(ErrorCode.configSetFailed, `config.set failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  if (key.startsWith('details_mode.')) {
    const name = key.slice('details_mode.'.length);
    if (!DETAILS_SECTIONS.includes(name)) fail(ErrorCode.invalidValue, `unknown config key: ${key}`);
    if (value !== '' && !(typeof value === 'string' && DETAILS_MODES.includes(value))) return invalid();
    // An empty value resets the section to the global mode.
    await persist(['display', 'sections', name], value === '' ? null : value);
    return { key, value };
  }
  switch (key) {
    case 'mouse':
    case 'compact': {
      const flag = onOff(value);
      if (flag === null) return invalid();
      await persist(['display', key === 'mouse' ? 'mouse_tracking' : 'tui_compact'], flag);
      return { key, value: flag ? 'on' : 'off' };
    }
    case 'density': {
      // `commands.catalog` offers `/density`, so the key it sets must be settable here.
      if (typeof value !== 'string' || !DENSITIES.includes(value)) return invalid();
      await persist(['display', 'tui_density'], value);
      return { key, value };
    }
    case 'statusbar': {
      if (typeof value !== 'string' || !STATUS_BAR.includes(value)) return invalid();
      await persist(['display', 'tui_statusbar'], value);
      return { key, value };
    }
    case 'theme':
    case 'indicator':
    case 'details_mode': {
      const allowed = key === 'theme' ? THEMES : key === 'indicator' ? INDICATORS : DETAILS_MODES;
      if (typeof value !== 'string' || !allowed.includes(value)) return invalid();
      const path = key === 'theme' ? 'tui_theme' : key === 'indicator' ? 'tui_status_indicator' : 'details_mode';
      await persist(['display', path], value);
      return { key, value };
    }
    case 'skin':
      return fail(ErrorCode.featureUnavailable, 'skins are not available on this host');
    case 'fast':
      return fail(ErrorCode.featureUnavailable, 'fast mode is not available on this host');
    case 'personality':
      return fail(ErrorCode.featureUnavailable, 'personalities are not available on this host');
    default:
      return undefined;
  }
}
