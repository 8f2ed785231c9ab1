import { HermesError } from '../errors.js';

/** Options of {@link fetchRemoteModelIds}. */
export interface RemoteModelsOptions {
  fetch: typeof globalThis.fetch;
  /** Sent as `Authorization: Bearer …` when not null. */
  apiKey: string | null;
  signal?: AbortSignal | undefined;
  /** Upper bound on one listing, so an endpoint that never answers cannot hold a caller (default 5 s). */
  timeoutMs?: number | undefined;
}

/**
 * Lists the model ids an OpenAI-compatible endpoint serves (`GET <baseUrl>/models`). Throws a
 * `provider_error` HermesError naming the endpoint when it is unreachable or answers badly.
 */
export async function fetchRemoteModelIds(baseUrl: string, options: RemoteModelsOptions): Promise<string[]> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 5000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey !== null) headers.authorization = `Bearer ${options.apiKey}`;
  let response: Response;
  try {
    response = await options.fetch(url, { headers, signal });
  } catch (error) {
    const cause =
      error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new HermesError('provider_error', `model listing failed: ${url} unreachable (${cause})`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new HermesError('provider_error', `model listing failed: ${url} answered HTTP ${response.status}`);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new HermesError('provider_error', `model listing failed: ${url} answered something other than JSON`);
  }
  const data = (body as { data?: unknown }).data;
  if (!Array.isArray(data))
    throw new HermesError('provider_error', `model listing failed: ${url} answered no "data" list`);
  return data
    .map((item) => (item as { id?: unknown })?.id)
    .filter((id): id is string => typeof id === 'string' && id !== '');
}
