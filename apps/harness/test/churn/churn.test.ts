import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CriServer, serveCri } from '@kh/cri-api';
import { afterEach, beforeEach, expect, test } from 'vitest';
import type { RuntimeBackend, StartedBackend } from '../../src/backends/types.js';
import { runChurn } from '../../src/churn/churn.js';
import { runChurnCommand } from '../../src/churn/command.js';
import { silentProgress } from '../run/fakes.js';

let dir: string;
let server: CriServer | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-churn-'));
});
afterEach(async () => {
  await server?.close({ graceMs: 0 });
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

/**
 * A runtime that deadlocks once `healthyRounds` rounds of pods have started, as dockerd 20.10.24
 * does under churn: from then on Status never answers (and Version still does).
 */
async function deadlockingRuntime(healthyRounds: number, pods: number) {
  const live = new Set<string>();
  const podCidrs: string[] = [];
  let next = 0;
  let created = 0;
  const hung = () => created >= healthyRounds * pods;
  server = await serveCri(
    {
      name: 'deadlocking',
      runtime: {
        version: () => ({ runtimeName: 'docker', runtimeVersion: '20.10.24' }),
        status: () => (hung() ? new Promise<never>(() => {}) : {}),
        runPodSandbox: () => {
          const id = `s${next++}`;
          created++;
          live.add(id);
          return { podSandboxId: id };
        },
        createContainer: () => ({ containerId: `c${next++}` }),
        startContainer: () => ({}),
        stopPodSandbox: () => ({}),
        updateRuntimeConfig: (req) => {
          podCidrs.push(req.runtimeConfig?.networkConfig?.podCidr ?? '');
          return {};
        },
        removePodSandbox: (req) => {
          live.delete(req.podSandboxId);
          return {};
        },
      },
    },
    { socketPath: join(dir, 'cri.sock') },
  );
  const started = {
    hostCriEndpoint: server.endpoint,
    runtimeName: 'docker',
    runtimeVersion: '20.10.24',
    sandboxImage: 'pause',
    dumpRuntimeStacks: async () => [
      'goroutine 61 [semacquire, 29 minutes]:',
      'github.com/docker/docker/libnetwork.(*controller).processEndpointDelete(...)',
      'goroutine 74980 [semacquire, 29 minutes]:',
      'github.com/docker/docker/libnetwork.(*sandbox).Delete(...)',
    ],
    stop: async () => {},
  } as unknown as StartedBackend;
  const backend: RuntimeBackend = {
    name: 'docker-20.10',
    description: 'test',
    capabilities: new Set(),
    start: async () => started,
  };
  return { backend, live, podCidrs };
}

const world = async () => ({ images: {} as never, network: {} as never, stop: async () => {} });

test('tears pods down round after round and stops at the hang, with the dump and its diagnosis', async () => {
  const { backend } = await deadlockingRuntime(2, 3);
  const summary = await runChurn(
    backend,
    { pods: 3, rounds: 10, callTimeoutMs: 5_000, statusEveryMs: 0, outDir: dir },
    silentProgress,
    undefined,
    world,
  );
  expect(summary.rounds.map((r) => [r.round, r.errors])).toEqual([
    [1, []],
    [2, []],
  ]);
  // Round 1 was torn down while round 2 started; the hang was seen before round 2's teardown ended.
  expect(summary.rounds[0]?.teardownMs).toBeGreaterThanOrEqual(0);
  expect(summary.sandboxesTornDown).toBe(3);
  expect(summary.hang).toMatchObject({ afterRound: 2, libnetworkDeadlock: true });
  expect(summary.hang?.reason).toMatch(/^runtime hung: CRI Version answers \(docker 20\.10\.24\)/);
  expect(await readFile(summary.hang!.stacksFile!, 'utf8')).toContain('processEndpointDelete');
  // The rounds' wall time covers the 10 s Status deadline that named the hang.
  expect(summary.roundsMs).toBeGreaterThanOrEqual(10_000);
}, 60_000);

test('runs every round when the runtime never hangs, and tears every pod down', async () => {
  const { backend, live, podCidrs } = await deadlockingRuntime(1_000, 2);
  const summary = await runChurn(
    backend,
    { pods: 2, rounds: 3, callTimeoutMs: 5_000, statusEveryMs: 10, outDir: dir },
    silentProgress,
    undefined,
    world,
  );
  expect(summary.rounds).toHaveLength(3);
  expect(summary.hang).toBeUndefined();
  expect(summary.sandboxesTornDown).toBe(6);
  expect(live.size).toBe(0);
  // As an agent passes on its Node's pod CIDR, before any pod: CNI needs its config.
  expect(podCidrs).toEqual(['10.244.0.0/24']);
});

test('churn refuses what it cannot run, with status 2', async () => {
  const io = { out: () => {}, err: (s: string) => errs.push(s) };
  const errs: string[] = [];
  expect(await runChurnCommand([], io, silentProgress)).toBe(2);
  expect(errs.join('')).toContain('--runtime names the column to churn');
  expect(await runChurnCommand(['-r', 'docker', '--pods', '0'], io, silentProgress)).toBe(2);
  expect(errs.join('')).toContain('--pods must be a whole number ≥ 1, got "0"');
  expect(await runChurnCommand(['-r', 'cri-o'], io, silentProgress)).toBe(2);
  expect(errs.join('')).toContain('unknown runtime "cri-o"');
  expect(await runChurnCommand(['-r', 'containerd', '--network-plugin', 'docker'], io, silentProgress)).toBe(
    2,
  );
  expect(errs.join('')).toContain('--network-plugin applies to the docker columns, not containerd-1.7');
  expect(await runChurnCommand(['-r', 'docker', '--network-plugin', 'weave'], io, silentProgress)).toBe(2);
  expect(errs.join('')).toContain('--network-plugin must be cni or docker, got "weave"');
});
