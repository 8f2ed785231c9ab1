import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Rig, startRig } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

function writeSkill(root: string, relative: string, content: string): void {
  mkdirSync(join(root, relative), { recursive: true });
  writeFileSync(join(root, relative, 'SKILL.md'), content);
}

describe('GET /v1/skills and /v1/toolsets (issue 16.2)', () => {
  it('lists the installed skills as a list object, skipping a malformed file, to the official client', async () => {
    rig = await startRig();
    const skills = join(rig.host.homeDir, 'skills');
    writeSkill(
      skills,
      'haiku',
      '---\nname: haiku\ndescription: Write a haiku\ntags: [poetry]\n---\nAnswer in 5-7-5.\n',
    );
    writeSkill(skills, 'devops/deploy', '---\nname: Deploy App\ndescription: Ship it\n---\nSteps.\n');
    writeSkill(skills, 'broken', '---\nname: [oops\n---\nbody\n');
    const listed = (await rig.client.get('/skills')) as { object: string; data: Record<string, unknown>[] };
    expect(listed).toEqual({
      object: 'list',
      data: [
        {
          object: 'skill',
          id: 'deploy-app',
          name: 'Deploy App',
          description: 'Ship it',
          category: 'devops',
          tags: [],
          source: 'home',
          command: '/deploy-app',
        },
        {
          object: 'skill',
          id: 'haiku',
          name: 'haiku',
          description: 'Write a haiku',
          category: 'general',
          tags: ['poetry'],
          source: 'home',
          command: '/haiku',
        },
      ],
    });
    // No server file path leaks to clients.
    expect(JSON.stringify(listed)).not.toContain(rig.host.homeDir);
  });

  it('lists the toolsets with their tools and enabled state', async () => {
    rig = await startRig({ config: { toolsets: ['file', 'terminal'], tools: { disabled: ['patch'] } } as never });
    const listed = (await rig.client.get('/toolsets')) as {
      object: string;
      data: { name: string; enabled: boolean; tools: { name: string; enabled: boolean }[]; tool_count: number }[];
    };
    expect(listed.object).toBe('list');
    const file = listed.data.find((toolset) => toolset.name === 'file');
    expect(file).toMatchObject({ object: 'toolset', id: 'file', enabled: true });
    expect(file?.tools).toContainEqual({ name: 'read_file', enabled: true });
    expect(file?.tools).toContainEqual({ name: 'patch', enabled: false });
    expect(file?.tool_count).toBe(file?.tools.length);
    const web = listed.data.find((toolset) => toolset.name === 'web');
    expect(web).toMatchObject({ enabled: false });
    expect(web?.tools.every((tool) => !tool.enabled)).toBe(true);
  });

  it('both routes need the API key and are announced in capabilities', async () => {
    rig = await startRig();
    for (const path of ['/v1/skills', '/v1/toolsets']) {
      const response = await fetch(rig.base + path);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { type: string } }).error).toBeDefined();
    }
    const wrong = new OpenAI({ baseURL: `${rig.base}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
    await expect(wrong.get('/skills')).rejects.toMatchObject({ status: 401 });
    const capabilities = (await rig.native.get('/v1/capabilities')) as {
      features: Record<string, unknown>;
      endpoints: Record<string, unknown>;
    };
    expect(capabilities.features.skills_api).toBe(true);
    expect(capabilities.endpoints.skills).toEqual({ method: 'GET', path: '/v1/skills' });
    expect(capabilities.endpoints.toolsets).toEqual({ method: 'GET', path: '/v1/toolsets' });
  });
});
