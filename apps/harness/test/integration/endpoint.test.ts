// The endpoint backend against a CRI socket "the user runs": our dockershim on the host engine, on
// a temp socket. The agent runs on this host, registers Ready with the runtime the socket names,
// and the scenarios that need a node of its own are skipped with the capability they lack.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureImages, removeLeftovers, runId } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForCri } from '../../src/backends/cri.js';
import { endpointBackend } from '../../src/backends/endpoint.js';
import { onHost } from '../../src/node/project.js';
import { runHarness } from '../../src/run/harness.js';
import { scenario, silentProgress } from '../run/fakes.js';

let dir: string;
let shim: ChildProcess | undefined;
let endpoint: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-endpoint-test-'));
  endpoint = `unix://${join(dir, 'dockershim.sock')}`;
  const { pause } = await ensureImages(['pause']);
  const [file, ...args] = onHost('dockershim', [
    `--listen=${endpoint}`,
    `--pod-infra-container-image=${pause}`,
    '--restrict-oom-score-adj',
    // Docker's bridge: the host has no CNI config (in cni mode the node would wait for one).
    '--network-plugin=docker',
  ]);
  shim = spawn(file!, args, { stdio: 'ignore' });
  await waitForCri(endpoint, 30_000);
}, 120_000);

afterAll(async () => {
  shim?.kill('SIGTERM');
  await rm(dir, { recursive: true, force: true });
  await removeLeftovers({ runId });
}, 60_000);

describe('endpoint backend', () => {
  it('registers the host as a Ready node on the given socket and skips what needs node isolation', async () => {
    let runtimeVersion = '';
    const registered = scenario('registered', async (ctx) => {
      const node = await ctx.core.readNode({ name: ctx.nodeName });
      runtimeVersion = node.status?.nodeInfo?.containerRuntimeVersion ?? '';
      ctx.check.equal('Ready', node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    });
    const eviction = scenario('eviction', async () => {}, { needs: ['real-containers', 'memory-pressure'] });
    const restart = scenario('status-reporting', async () => {}, { needs: ['runtime-restart'] });
    const out = join(dir, 'out');
    const { results } = await runHarness(
      { runtimes: ['endpoint'], scenarios: undefined, outDir: out },
      [registered, eviction, restart],
      { progress: silentProgress },
      { backends: [endpointBackend(endpoint)] },
    );
    expect(results.cells.map((c) => [c.scenario, c.outcome, c.reason ?? ''])).toEqual([
      ['registered', 'passed', ''],
      ['eviction', 'skipped', 'backend endpoint lacks memory-pressure'],
      ['status-reporting', 'skipped', 'backend endpoint lacks runtime-restart'],
    ]);
    expect(runtimeVersion).toMatch(/^docker:\/\/\d+\./);
    expect(results.runtimes[0]).toMatchObject({
      name: 'endpoint',
      runtimeName: 'docker',
      criEndpoint: endpoint,
    });
  }, 300_000);
});
