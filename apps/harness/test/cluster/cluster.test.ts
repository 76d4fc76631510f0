// `up` then `down` for real, with the fake backend (the quickest node): kubectl sees the node
// Ready through the kubeconfig `up` wrote, and `down` leaves no container, network or volume
// with the cluster's label, no kubeconfig and no state.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { nodeImageName, runId } from '@kh/testkit';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeBackend } from '../../src/backends/fake.js';
import type { RuntimeBackend } from '../../src/backends/types.js';
import { clusterDown, clusterUp } from '../../src/cluster/cluster.js';
import { ClusterStateFile } from '../../src/cluster/state.js';
import { consoleProgress } from '../../src/support/progress.js';

const run = promisify(execFile);
const KUBECTL = '/usr/lib/google-cloud-sdk/bin/kubectl.1.33';

function io() {
  const out: string[] = [];
  const lines: string[] = [];
  return {
    out,
    lines,
    io: { out: (s: string) => out.push(s), progress: consoleProgress((l) => lines.push(l)) },
  };
}

describe('kubelet-harness up / down', () => {
  let dir = '';
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('rejects unknown runtimes and flags with status 2, and down without a cluster is a no-op', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-cluster-test-'));
    const state = new ClusterStateFile(dir);
    const a = io();
    expect(await clusterUp(['--runtime', 'nope'], a.io, { state })).toBe(2);
    expect(a.out.join('')).toContain('unknown runtime "nope"');
    expect(await clusterUp(['--bogus'], io().io, { state })).toBe(2);
    const b = io();
    expect(await clusterDown([], b.io, { state })).toBe(0);
    expect(b.lines.join('\n')).toContain('no cluster is up');
    expect(await state.read()).toBeUndefined();
  });

  it('brings up a node kubectl sees Ready, refuses a second up, and down removes everything', async () => {
    const state = new ClusterStateFile(dir);
    const kubeconfig = join(dir, 'admin.kubeconfig');
    const docker = new Docker();
    const label = [`kh.run=${runId}`];
    // The fake node, from a backend that lists a node image of another release, as the versioned
    // columns do: up builds what the backends list, as run does.
    const release = nodeImageName('trixie');
    let built: string | undefined;
    const backend: RuntimeBackend = {
      ...fakeBackend,
      images: [release],
      start: (ctx) => {
        built = ctx.images[release];
        return fakeBackend.start(ctx);
      },
    };
    try {
      const up = io();
      expect(
        await clusterUp(['--runtime', 'fake', '--kubeconfig', kubeconfig], up.io, {
          state,
          backends: [backend],
        }),
      ).toBe(0);
      expect(built).toMatch(/node-trixie/);
      expect(up.out.join('')).toContain(`kubeconfig (admin): ${kubeconfig}`);
      expect(up.out.join('')).toMatch(/pause +registry:5000\/kh\/pause:/);
      expect(up.lines.some((l) => l.includes('Ready after'))).toBe(true);
      const recorded = await state.read();
      expect(recorded).toMatchObject({ runId, runtimes: ['fake'], kubeconfig, nodes: [`kh-${runId}-fake`] });

      const { stdout } = await run(KUBECTL, ['--kubeconfig', kubeconfig, 'get', 'nodes', '--no-headers']);
      expect(stdout).toMatch(new RegExp(`^kh-${runId}-fake\\s+Ready\\b`, 'm'));

      const again = io();
      expect(await clusterUp(['--runtime', 'fake'], again.io, { state })).toBe(1);
      expect(again.lines.join('\n')).toContain('a cluster is already up');
      expect(await docker.listContainers({ filters: { label } })).not.toHaveLength(0);
    } finally {
      expect(await clusterDown([], io().io, { state })).toBe(0);
    }
    const left = await Promise.all([
      docker.listContainers({ all: true, filters: { label } }),
      docker.listNetworks({ filters: { label } }),
      docker.listVolumes({ filters: { label } }).then((v) => v.Volumes ?? []),
    ]);
    expect(left.map((l) => l.length)).toEqual([0, 0, 0]);
    expect(existsSync(kubeconfig)).toBe(false);
    expect(await state.read()).toBeUndefined();
  }, 180_000);
});
