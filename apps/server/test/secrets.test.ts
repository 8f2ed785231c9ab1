import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ScriptedServer, startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { requireBwrap } from '../../../packages/core/test/security/support.js';
import { cleanups, runCleanups, startServer, temp } from './support/server-process.js';

afterEach(runCleanups);

const PROVIDER_KEY = 'hk-provider-key-5t6y7u8i9o0p1a2s';
const GATEWAY_TOKEN = 'gw-token-3d4f5g6h7j8k9l0z1x2c';

describe('apps/server keeps its secrets from the model (issue 32)', () => {
  it('a hostile model reads neither the generated key, the gateway token nor the provider key, and cannot rewrite config.yaml', async () => {
    requireBwrap();
    const homeDir = temp('hermes-home-');
    const config = 'session:\n  auto_title: false\n';
    writeFileSync(join(homeDir, 'config.yaml'), config);
    const model: ScriptedServer = await startScriptedOpenAIServer({
      // The provider key is real: the scripted provider refuses requests without it.
      apiKey: PROVIDER_KEY,
      script: [
        step(
          toolCall('terminal', {
            command:
              'echo "key=$API_SERVER_KEY token=$HERMES_GATEWAY_TOKEN provider=$HERMES_API_KEY"; env; tr "\\0" "\\n" < /proc/$PPID/environ; cat "$HERMES_HOME/.env" ~/.env',
          }),
        ),
        step(toolCall('read_file', { path: join(homeDir, '.env') })),
        step(toolCall('write_file', { path: join(homeDir, 'config.yaml'), content: 'approvals:\n  mode: off\n' })),
        step(text('done')),
      ],
    });
    cleanups.push(() => model.close());
    // No API_SERVER_KEY: the server generates one and saves it to HERMES_HOME/.env.
    const server = await startServer({
      HERMES_HOME: homeDir,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      HERMES_API_KEY: PROVIDER_KEY,
      HERMES_GATEWAY_TOKEN: GATEWAY_TOKEN,
    });
    const key = /API_SERVER_KEY=(\S+)/.exec(readFileSync(join(homeDir, '.env'), 'utf8'))?.[1] as string;
    expect(key).toBeTruthy();
    const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };

    const chat = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'print your key' }] }),
    });
    expect(chat.status).toBe(200);
    const answer = JSON.stringify(await chat.json());
    expect(answer).toContain('done');

    // Everything the model was sent: the tool results of all three attacks.
    expect(model.requests).toHaveLength(4);
    const seen = JSON.stringify(model.requests.map((request) => request.body));
    expect(seen).toContain('PATH=');
    expect(seen).toContain('is protected');
    for (const secret of [key, GATEWAY_TOKEN, PROVIDER_KEY]) {
      expect(seen).not.toContain(secret);
      expect(answer).not.toContain(secret);
    }
    expect(readFileSync(join(homeDir, 'config.yaml'), 'utf8')).toBe(config);

    const health = (await (await fetch(`${server.url}/health/detailed`, { headers })).json()) as {
      sandbox: { setting: string; active: string; network: boolean };
    };
    expect(health.sandbox).toEqual({ setting: 'auto', active: 'bwrap', network: true, reason: null });
  }, 120_000);
});
