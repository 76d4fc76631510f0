// The dockershim's CRI server under hostile input, on the host dockerd (issue 20): raw bytes,
// wrong wire types and hostile values, KH_FUZZ_RUNS cases (default 300, seed fixed). Every reply
// must carry a precise code with a message, the shim must still answer Version, Docker must hold
// exactly the containers of before, and the heap must come back to its baseline. dockerd is
// shared with other processes, so the suite never pulls, never sends an id dockerd could resolve
// to another process's container, and compares only what carries this run's label.
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { runCriFuzz } from '@kh/cri-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, ShimHarness } from './harness.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const RUNS = Number(process.env.KH_FUZZ_RUNS ?? 300);
const SEED = 2020;

const h = new ShimHarness();
beforeAll(async () => {
  await h.start();
});
afterAll(async () => {
  await h.cleanup();
});

const labelled = async () =>
  (await docker.listContainers({ all: true, filters: { label: [`kh.run=${h.runId}`] } }))
    .map((c) => c.Id)
    .sort();

describe('dockershim CRI server fuzz', () => {
  it('states its limits in --help', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, '--help']);
    expect(stdout).toMatch(/CRI requests up to 4 MiB \(bigger: RESOURCE_EXHAUSTED\)/);
    expect(stdout).toMatch(/ExecSync keeps 16 MiB/);
    expect(stdout).toMatch(/1000 pending Exec\/Attach\/PortForward URLs, each valid 60 s/);
    expect(stdout).toMatch(/The socket is mode 0660/);
  });

  it('serves its socket with mode 0660', async () => {
    expect((await stat(h.shim.endpoint.replace(/^unix:\/\//, ''))).mode & 0o777).toBe(0o660);
  });

  it(
    `answers ${RUNS} hostile requests with precise codes and leaks nothing`,
    { timeout: 900_000 },
    async () => {
      const options = { labels: h.labels, sharedEngine: true };
      const before = await labelled();
      // Warm up the paths the run takes, so the baseline includes what stays loaded.
      const warm = await runCriFuzz(fc, h.shim.endpoint, { ...options, runs: 20, seed: 1 });
      for (const id of warm.created.sandboxes) await h.client.removePodSandbox({ podSandboxId: id });
      const baseline = heapMiB();

      const run = await runCriFuzz(fc, h.shim.endpoint, { ...options, runs: RUNS, seed: SEED });
      console.log(`dockershim fuzz: ${run.tally.summary()}`);
      expect(run.tally.distinctFaults()).toEqual([]);
      expect(run.tally.cases).toBe(RUNS);

      expect((await h.client.version({})).runtimeName).toBe('docker');
      for (const id of run.created.containers) await h.client.removeContainer({ containerId: id });
      for (const id of run.created.sandboxes) await h.client.removePodSandbox({ podSandboxId: id });
      expect(await labelled()).toEqual(before);
      expect(heapMiB() - baseline).toBeLessThan(16);
    },
  );
});
