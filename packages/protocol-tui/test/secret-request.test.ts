import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ScriptedServer, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function endpoint(apiKey: string): Promise<ScriptedServer> {
  const server = await startScriptedOpenAIServer({ script: [step(text('keyed reply'))], apiKey, models: ['keyed'] });
  cleanups.push(() => server.close());
  return server;
}

/**
 * Creates a session with `create`'s params, sends a prompt, answers the `secret` request it raises for MINE_API_KEY
 * with `key`, and checks the turn's answer is the keyed endpoint's and the key is saved in .env. Resolves with the
 * stored session id.
 */
async function promptAnsweringSecret(
  gateway: Awaited<ReturnType<typeof createFixture>>,
  create: Record<string, unknown>,
  key: string,
): Promise<string> {
  const client = await gateway.connect();
  const created = await client.result('session.create', create);
  await client.result('prompt.submit', { session_id: created.session_id, text: 'hello' });
  const request = await client.waitFor((frame) => frame.method === 'secret', 30_000);
  expect(request.params).toMatchObject({ env_var: 'MINE_API_KEY' });
  expect(await client.result('request.answer', { id: request.id, result: { value: key } })).toEqual({ status: 'ok' });
  const done = await client.event('message.complete', created.session_id);
  // The keyed endpoint answered: the key reached its provider.
  expect(done.payload.text).toBe('keyed reply');
  expect(readFileSync(join(gateway.host.homeDir, '.env'), 'utf8')).toContain(`MINE_API_KEY=${key}`);
  return created.stored_session_id as string;
}

describe('the secret server request (§6.4, core §24.7)', () => {
  it('is raised when the key of the session model is missing; the answer is saved and the turn runs', async () => {
    const key = 'secret-answer-0123456789';
    const server = await endpoint(key);
    const gateway = await createFixture({
      config: {
        model: { default: 'mine:keyed' },
        providers: { mine: { base_url: server.baseURL, api_key_env: 'MINE_API_KEY' } },
      },
    });
    cleanups.push(() => gateway.dispose());
    await promptAnsweringSecret(gateway, {}, key);
  });

  it('is raised when the key of a model pinned by session.create is missing; the turn then runs on the pin', async () => {
    const key = 'pinned-answer-0123456789';
    const server = await endpoint(key);
    const other = await startScriptedOpenAIServer({ script: [step(text('default reply'))], models: ['plain'] });
    cleanups.push(() => other.close());
    const gateway = await createFixture({
      config: {
        model: { default: 'open:plain' },
        providers: {
          open: { base_url: other.baseURL, api_key: 'not-needed' },
          mine: { base_url: server.baseURL, api_key_env: 'MINE_API_KEY' },
        },
      },
    });
    cleanups.push(() => gateway.dispose());
    // The pinned model answers, not the default one ('default reply').
    const storedId = await promptAnsweringSecret(gateway, { model: 'mine:keyed' }, key);
    // The pin is the session's model now, stored with it.
    const stored = await gateway.host.store.getSession(storedId);
    expect(stored?.model).toBe('mine:keyed');
  });
});
