import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession } from './context.js';

/**
 * Features of the Hermes TUI this host does not have (ADR 0006). Where the TUI renders a "not
 * available" answer, that answer is given in its shape; otherwise the error is 4090. Nothing here
 * claims that something happened.
 */

function unavailable(feature: string): never {
  fail(ErrorCode.featureUnavailable, `${feature} is not available on this host`);
}

/** A method whose whole feature is missing. */
export const unavailableFeature = (feature: string) => (): Record<string, unknown> => unavailable(feature);

const WAKE_HINT = 'wake word listening is not available on this host';
const VOICE_DETAILS = 'voice input and speech output are not available on this host';

/** `wake.start`: the TUI's refusal shape (`started:false`, reason `unavailable`). */
export function wakeStart() {
  return { started: false, reason: 'unavailable', hint: WAKE_HINT, enabled_persisted: false };
}

/** `wake.stop`: nothing is listening. */
export function wakeStop() {
  return { stopped: false, reason: WAKE_HINT, disabled_persisted: false };
}

/** `wake.status`. */
export function wakeStatus() {
  return { available: false, enabled: false, listening: false, hint: WAKE_HINT };
}

/** `voice.toggle`: voice mode stays off; `details` says why. */
export function voiceToggle() {
  return {
    enabled: false,
    tts: false,
    available: false,
    audio_available: false,
    stt_available: false,
    details: VOICE_DETAILS,
  };
}

/** `voice.record`. */
export function voiceRecord(context: MethodContext): Record<string, unknown> {
  if (typeof context.params.session_id === 'string') requireSession(context);
  return unavailable('voice recording');
}

/** `pet.info.meta` and `pet.cells`: there is no pet; the TUI hides it. */
export function petDisabled() {
  return { enabled: false };
}
