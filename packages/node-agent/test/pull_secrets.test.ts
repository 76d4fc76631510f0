import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podPullSecrets } from '../src/pods/pull_secrets.js';
import { MemoryNodeApi } from './helpers/memory_api.js';

const secret = (name: string) => ({
  metadata: { name, namespace: 'team' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') },
});

const pod = (names: string[]): V1Pod => ({
  metadata: { name: 'p', namespace: 'team' },
  spec: { containers: [], imagePullSecrets: names.map((name) => ({ name })) },
});

describe('podPullSecrets', () => {
  it("reads the pod's imagePullSecrets from its namespace, skipping missing ones with a log line", async () => {
    const api = new MemoryNodeApi();
    api.secrets.set('team/regcred', secret('regcred'));
    const logged: unknown[] = [];
    const log = { info: (_m: string, f?: object) => logged.push(f), error() {}, v() {} };
    const got = await podPullSecrets(api, pod(['regcred', 'missing']), log);
    expect(got.map((s) => s.metadata?.name)).toEqual(['regcred']);
    expect(logged).toEqual([{ pod: 'team/p', secret: 'missing', err: 'not found' }]);
  });

  it('makes no API call for a pod without pull secrets, and survives an API outage', async () => {
    const api = new MemoryNodeApi();
    expect(await podPullSecrets(api, pod([]))).toEqual([]);
    expect(api.calls).toEqual([]);
    api.down = true;
    expect(await podPullSecrets(api, pod(['regcred']))).toEqual([]);
  });
});
