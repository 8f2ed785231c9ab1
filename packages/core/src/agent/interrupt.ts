/** Why a turn was interrupted (spec/core.md §7.10). */
export interface InterruptReason {
  readonly kind: 'interrupt';
  issuer: string;
  reason: string;
  hard: boolean;
  message?: string;
}

/** Why one model request was aborted without ending the turn. */
export interface RedirectReason {
  readonly kind: 'redirect';
  text: string;
}

/** True when `value` is an {@link InterruptReason}. */
export function isInterruptReason(value: unknown): value is InterruptReason {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'interrupt';
}

/** True when `value` is a {@link RedirectReason}. */
export function isRedirectReason(value: unknown): value is RedirectReason {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'redirect';
}

const ISSUER_PATTERN = /^[a-z0-9_]+$/;

/** Builds an interrupt reason from options, validating the issuer name. */
export function makeInterruptReason(
  options: { issuer?: string; reason?: string; message?: string; hard?: boolean } = {},
): InterruptReason {
  const issuer = options.issuer ?? 'user';
  if (!ISSUER_PATTERN.test(issuer)) throw new TypeError(`Invalid issuer "${issuer}": use lowercase [a-z0-9_]+.`);
  const reason: InterruptReason = {
    kind: 'interrupt',
    issuer,
    reason: options.reason ?? (issuer === 'user' ? 'interrupted' : issuer),
    hard: options.hard ?? false,
  };
  if (options.message !== undefined) reason.message = options.message;
  return reason;
}

/** Interrupt reason of an aborted caller signal: its issuer when it names one, else `caller`. */
export function interruptFromSignal(signal: AbortSignal): InterruptReason {
  const reason = signal.reason as unknown;
  if (isInterruptReason(reason)) return reason;
  if (typeof reason === 'object' && reason !== null && typeof (reason as { issuer?: unknown }).issuer === 'string') {
    const issuer = (reason as { issuer: string }).issuer;
    if (ISSUER_PATTERN.test(issuer))
      return makeInterruptReason({ issuer, reason: String((reason as { reason?: unknown }).reason ?? issuer) });
  }
  return makeInterruptReason({ issuer: 'caller', reason: 'the caller aborted the turn' });
}

/** Exit reason string of a cancelled turn (spec/core.md §8). */
export function cancelledExitReason(reason: InterruptReason): string {
  return reason.issuer === 'user' ? 'interrupted_by_user' : `interrupted_by_system(${reason.issuer})`;
}

/** Synthetic tool result text naming who stopped the call (spec/core.md §7.10). */
export function cancelledToolText(reason: InterruptReason): string {
  if (reason.issuer === 'user') return 'Tool call cancelled: interrupted by the user.';
  return `Tool call cancelled: stopped by the system (${reason.issuer}): ${reason.reason}.`;
}

/** Issuer of a turn stopped because another process took its session's lease over (issue 33.3, ADR 0049). */
export const LEASE_LOST_ISSUER = 'session_turn_lease_lost';

/** The interrupt of a turn whose lease was taken over: its writes are refused from then on. */
export function leaseLostInterrupt(): InterruptReason {
  return { kind: 'interrupt', issuer: LEASE_LOST_ISSUER, reason: 'another process took over the session', hard: false };
}
