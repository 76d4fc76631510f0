import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { nodeCidrSets } from '../src/controllers/node-ipam.js';
import { type ApiServer, createApiServer } from '../src/index.js';
import { formatCidr, parseCidr } from '../src/meta/cidr.js';
import type { KObject } from '../src/meta/object.js';
import { ApiClient, eventually, readyNode } from './helpers.js';

// kube-controller-manager's --allocate-node-cidrs, as the fake apiserver runs it.

let server: ApiServer | undefined;
const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-ipam-'));
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(opts: Parameters<typeof createApiServer>[0]) {
  server = await createApiServer({ scheduler: false, nodeLifecycle: false, ...opts });
  return new ApiClient(server.url);
}

const spec = async (api: ApiClient, name: string): Promise<KObject> =>
  (await api.get(`/api/v1/nodes/${name}`)).body.spec ?? {};

/** Waits until the controller gave the node its CIDRs; returns them. */
const cidrsOf = (api: ApiClient, name: string) =>
  eventually(async () => {
    const s = await spec(api, name);
    expect(s.podCIDRs?.length).toBeGreaterThan(0);
    return s.podCIDRs as string[];
  });

describe('CIDR arithmetic', () => {
  it('reads and prints CIDRs as Go does, host bits masked', () => {
    expect(formatCidr(parseCidr('10.244.3.7/24')!)).toBe('10.244.3.0/24');
    expect(formatCidr(parseCidr('fd00:10:244::1/64')!)).toBe('fd00:10:244::/64');
    expect(formatCidr(parseCidr('2001:db8:0:0:1:0:0:1/128')!)).toBe('2001:db8::1:0:0:1/128');
    expect(formatCidr(parseCidr('::/0')!)).toBe('::/0');
    for (const bad of ['10.0.0.0', '10.0.0.256/24', '10.0.0.0/33', '1::2::3/64', 'x/8', '10.0.0.0/24/1'])
      expect(parseCidr(bad), bad).toBeUndefined();
  });

  it('checks the flags as kube-controller-manager does', () => {
    expect(
      nodeCidrSets({ clusterCidr: '10.244.0.0/16' }).map((s) => [formatCidr(s.cluster), s.maskSize]),
    ).toEqual([['10.244.0.0/16', 24]]);
    expect(
      nodeCidrSets({ clusterCidr: '10.244.0.0/16,fd00:10:244::/56', nodeCidrMaskSizeIPv4: 26 }).map(
        (s) => s.maskSize,
      ),
    ).toEqual([26, 64]);
    expect(() => nodeCidrSets({ clusterCidr: '' })).toThrow('--allocate-node-cidrs needs --cluster-cidr');
    expect(() => nodeCidrSets({ clusterCidr: '10.0.0.0/8,10.1.0.0/16' })).toThrow(
      'at most one CIDR per IP family',
    );
    expect(() => nodeCidrSets({ clusterCidr: '10.0.0.0/24', nodeCidrMaskSize: 16 })).toThrow('does not fit');
    expect(() => nodeCidrSets({ clusterCidr: 'fd00::/48', nodeCidrMaskSize: 80 })).toThrow('too big');
    expect(() => nodeCidrSets({ clusterCidr: '10.0.0.0/8,fd00::/48', nodeCidrMaskSize: 24 })).toThrow(
      'not allowed with dual-stack',
    );
  });
});

describe('node IPAM controller', () => {
  it('gives each node its own /24 of the cluster CIDR, in spec.podCIDR and spec.podCIDRs', async () => {
    const api = await start({ nodeIpam: { clusterCidr: '10.244.0.0/16', nodeCidrMaskSize: 24 } });
    for (const n of ['a', 'b', 'c']) await api.post('/api/v1/nodes', readyNode(n));
    const all = await Promise.all(['a', 'b', 'c'].map((n) => cidrsOf(api, n)));
    expect(all).toEqual([['10.244.0.0/24'], ['10.244.1.0/24'], ['10.244.2.0/24']]);
    expect((await spec(api, 'b')).podCIDR).toBe('10.244.1.0/24');
    // The kubelet cannot move it, nor can anyone else.
    const moved = await api.patch('/api/v1/nodes/b', 'merge', {
      spec: { podCIDR: '10.244.9.0/24', podCIDRs: ['10.244.9.0/24'] },
    });
    expect(moved.status).toBe(422);
    expect(moved.body.message).toContain('node updates may not change podCIDR except from "" to valid');
  });

  it('gives one subnet per family on a dual-stack cluster', async () => {
    const api = await start({
      nodeIpam: {
        clusterCidr: '10.244.0.0/16,fd00:10:244::/56',
        nodeCidrMaskSizeIPv4: 24,
        nodeCidrMaskSizeIPv6: 64,
      },
    });
    await api.post('/api/v1/nodes', readyNode('dual'));
    expect(await cidrsOf(api, 'dual')).toEqual(['10.244.0.0/24', 'fd00:10:244::/64']);
  });

  it('keeps a CIDR a node came with, releases them when nodes go, and says when none is left', async () => {
    const api = await start({ nodeIpam: { clusterCidr: '10.9.0.0/23', nodeCidrMaskSize: 24 } });
    const own = readyNode('own');
    own.spec = { ...own.spec, podCIDR: '10.9.0.0/24', podCIDRs: ['10.9.0.0/24'] };
    await api.post('/api/v1/nodes', own);
    await api.post('/api/v1/nodes', readyNode('second'));
    expect(await cidrsOf(api, 'second')).toEqual(['10.9.1.0/24']);
    await api.post('/api/v1/nodes', readyNode('third'));
    const events = await eventually(async () => {
      const list = (await api.get('/api/v1/namespaces/default/events')).body.items as KObject[];
      const e = list.filter((x) => x.involvedObject.name === 'third' && x.reason === 'CIDRNotAvailable');
      expect(e).toHaveLength(1);
      return e;
    });
    expect(events[0]).toMatchObject({
      message: 'Node third status is now: CIDRNotAvailable',
      source: { component: 'cidrAllocator' },
    });
    expect((await spec(api, 'third')).podCIDRs).toBeUndefined();
    // A node goes: its subnet comes back, and the node that waited gets it.
    await api.delete('/api/v1/nodes/own');
    expect(await cidrsOf(api, 'third')).toEqual(['10.9.0.0/24']);
  });

  it('is off unless asked, as in kube-controller-manager', async () => {
    const api = await start({});
    await api.post('/api/v1/nodes', readyNode('plain'));
    await new Promise((r) => setTimeout(r, 100));
    expect((await spec(api, 'plain')).podCIDRs).toBeUndefined();
    expect(server?.nodeIpam).toBeUndefined();
  });

  it('hands out no subnet twice across a restart with --data-dir', async () => {
    const data = join(dir, 'restart');
    const opts = { dataDir: data, nodeIpam: { clusterCidr: '10.244.0.0/16' } };
    let api = await start(opts);
    await api.post('/api/v1/nodes', readyNode('before'));
    expect(await cidrsOf(api, 'before')).toEqual(['10.244.0.0/24']);
    await server?.close();
    api = await start(opts);
    await api.post('/api/v1/nodes', readyNode('after'));
    expect(await cidrsOf(api, 'after')).toEqual(['10.244.1.0/24']);
    expect(await cidrsOf(api, 'before')).toEqual(['10.244.0.0/24']);
  });

  it('takes the flags on the command line and refuses bad ones', async () => {
    const cli = join(import.meta.dirname, '..', 'dist', 'cli.js');
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [cli, '--port', '0', ...args], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (b: Buffer) => {
          stderr += b.toString();
          if (stderr.includes('listening on')) child.kill('SIGTERM');
        });
        child.on('exit', (code) => resolve({ code, stderr }));
      });
    expect(await run(['--allocate-node-cidrs'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--allocate-node-cidrs needs --cluster-cidr'),
    });
    expect(
      await run(['--allocate-node-cidrs', '--cluster-cidr', '10.244.0.0/16', '--node-cidr-mask-size', 'x']),
    ).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--node-cidr-mask-size: not a number'),
    });
    // Good flags: it serves (and is then stopped by the test).
    const good = await run([
      '--allocate-node-cidrs',
      '--cluster-cidr',
      '10.244.0.0/16',
      '--node-cidr-mask-size',
      '24',
    ]);
    expect(good.stderr).toContain('listening on');
    expect(good.code).not.toBe(1);
  });
});
