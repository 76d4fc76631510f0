import { FakeClock } from '@kh/apimachinery';
import type { V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { bytesToFree, selectImagesToFree, usagePercent } from '../../src/images/image_gc.js';
import { applyDefaultImageTag, defaultPullPolicy, pullPolicyOf } from '../../src/images/image_ref.js';
import { buildKeyring, lookupAuth } from '../../src/images/pull_secrets.js';
import { newImagePuller } from '../../src/images/puller.js';
import { TokenBucket } from '../../src/images/rate_limit.js';

// Parsing a reference is @kh/apimachinery's, tested there; these are the kubelet's defaults on top.
describe('image references', () => {
  it('adds :latest only when there is neither tag nor digest', () => {
    expect(applyDefaultImageTag('busybox')).toBe('busybox:latest');
    expect(applyDefaultImageTag('registry:5000/app')).toBe('registry:5000/app:latest');
    expect(applyDefaultImageTag('busybox:1')).toBe('busybox:1');
  });
  it('defaults the pull policy from the tag', () => {
    expect(defaultPullPolicy('busybox')).toBe('Always');
    expect(defaultPullPolicy('busybox:latest')).toBe('Always');
    expect(defaultPullPolicy('busybox:1.36')).toBe('IfNotPresent');
    expect(defaultPullPolicy(`busybox@sha256:${'b'.repeat(64)}`)).toBe('IfNotPresent');
    expect(pullPolicyOf({ name: 'c', image: 'busybox', imagePullPolicy: 'Never' })).toBe('Never');
  });
});

const dockerSecret = (auths: Record<string, unknown>, name = 's'): V1Secret => ({
  metadata: { name, namespace: 'ns' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })).toString('base64') },
});

describe('pull secrets', () => {
  it('turns a dockerconfigjson secret into a CRI AuthConfig for matching images', () => {
    const kr = buildKeyring([
      dockerSecret({ 'registry:5000': { auth: Buffer.from('alice:s3cr:et').toString('base64') } }),
    ]);
    expect(lookupAuth(kr, 'registry:5000/app:1')).toEqual([
      {
        username: 'alice',
        password: 's3cr:et',
        auth: Buffer.from('alice:s3cr:et').toString('base64'),
        serverAddress: 'https://registry:5000',
        identityToken: '',
        registryToken: '',
      },
    ]);
    expect(lookupAuth(kr, 'other:5000/app:1')).toEqual([]);
    expect(lookupAuth(kr, 'registry:5001/app:1')).toEqual([]);
  });
  it('matches Docker Hub aliases, path prefixes and wildcards, most specific first', () => {
    const kr = buildKeyring([
      dockerSecret({
        'https://index.docker.io/v1/': { username: 'hub', password: 'p' },
        '*.example.com': { username: 'wild', password: 'p' },
        'r.example.com/team': { username: 'team', password: 'p' },
      }),
    ]);
    expect(lookupAuth(kr, 'busybox').map((a) => a.username)).toEqual(['hub']);
    expect(lookupAuth(kr, 'r.example.com/team/app').map((a) => a.username)).toEqual(['team', 'wild']);
    expect(lookupAuth(kr, 'r.example.com/teamx/app').map((a) => a.username)).toEqual(['wild']);
  });
  it('reports unusable secrets instead of failing', () => {
    const bad: V1Secret = {
      metadata: { name: 'b', namespace: 'ns' },
      data: { '.dockerconfigjson': 'bm9wZQ==' },
    };
    const kr = buildKeyring([bad, { metadata: { name: 'e', namespace: 'ns' }, data: {} }]);
    expect(kr.entries).toEqual([]);
    expect(kr.problems).toHaveLength(2);
    expect(kr.problems[1]).toMatch(/neither .dockerconfigjson nor .dockercfg/);
  });
  it('reads the legacy .dockercfg format', () => {
    const s: V1Secret = {
      metadata: { name: 'old', namespace: 'ns' },
      data: {
        '.dockercfg': Buffer.from(
          JSON.stringify({ 'registry:5000': { username: 'u', password: 'p' } }),
        ).toString('base64'),
      },
    };
    expect(lookupAuth(buildKeyring([s]), 'registry:5000/x')[0]?.username).toBe('u');
  });
});

describe('registry rate limit', () => {
  it('allows a burst, then refills at registryPullQPS', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = new TokenBucket(2, 3, clock);
    expect([b.tryAccept(), b.tryAccept(), b.tryAccept(), b.tryAccept()]).toEqual([true, true, true, false]);
    clock.step(499);
    expect(b.tryAccept()).toBe(false);
    clock.step(1);
    expect(b.tryAccept()).toBe(true);
  });
  it('qps 0 means unlimited', () => {
    const b = new TokenBucket(0, 0);
    for (let i = 0; i < 100; i++) expect(b.tryAccept()).toBe(true);
  });
});

describe('image puller', () => {
  async function maxConcurrency(puller: ReturnType<typeof newImagePuller>, n: number): Promise<number> {
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: n }, () =>
        puller.run(async () => {
          active++;
          peak = Math.max(peak, active);
          await new Promise((r) => setImmediate(r));
          active--;
        }),
      ),
    );
    return peak;
  }
  it('serialises pulls by default', async () => {
    expect(await maxConcurrency(newImagePuller({ serializeImagePulls: true }), 5)).toBe(1);
  });
  it('caps parallel pulls at maxParallelImagePulls, or not at all', async () => {
    expect(
      await maxConcurrency(newImagePuller({ serializeImagePulls: false, maxParallelImagePulls: 2 }), 6),
    ).toBe(2);
    expect(await maxConcurrency(newImagePuller({ serializeImagePulls: false }), 6)).toBe(6);
  });
  it('rejects maxParallelImagePulls with serialized pulls, and passes errors through', async () => {
    expect(() => newImagePuller({ serializeImagePulls: true, maxParallelImagePulls: 3 })).toThrow(
      /serializeImagePulls/,
    );
    const p = newImagePuller({ serializeImagePulls: true });
    await expect(p.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect((await p.run(async () => 7)).value).toBe(7);
  });
});

describe('image GC selection', () => {
  const rec = (id: string, size: number, firstDetected: number, lastUsed: number, pinned = false) => ({
    id,
    size,
    firstDetected,
    lastUsed,
    pinned,
  });
  it('computes usage and the amount to free like the kubelet', () => {
    expect(usagePercent(85, 100)).toBe(85);
    expect(usagePercent(841, 1000)).toBe(85);
    expect(bytesToFree(90, 100, 80)).toBe(10);
    expect(bytesToFree(70, 100, 80)).toBe(0);
  });
  it('frees least recently used first, skipping in-use, pinned and young images', () => {
    const now = 1_000_000;
    const records = [
      rec('new', 50, now - 1000, 0),
      rec('lru', 10, 0, 100),
      rec('mru', 10, 0, 900),
      rec('used', 10, 0, 0),
      rec('pin', 10, 0, 0, true),
      rec('mid', 10, 0, 500),
    ];
    const chosen = selectImagesToFree(records, new Set(['used']), 15, now, 120_000);
    expect(chosen.map((r) => r.id)).toEqual(['lru', 'mid']);
    expect(selectImagesToFree(records, new Set(['used']), 1000, now, 120_000).map((r) => r.id)).toEqual([
      'lru',
      'mid',
      'mru',
    ]);
  });
});
