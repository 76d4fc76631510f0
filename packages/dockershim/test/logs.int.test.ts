import { access, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerState, CriClient, FailedPreconditionError } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerShim, parseCriLogLine } from '../src/index.js';
import { docker, ENGINE_ENDPOINT, ShimHarness, waitFor } from './harness.js';

// The CRI log file as kubelet uses it: there as soon as the container starts, rotated by rename +
// ReopenContainerLog, and complete, without duplicates, across shim restarts.

const h = new ShimHarness();
beforeAll(async () => {
  await h.start();
});
afterAll(async () => {
  await h.cleanup();
});

async function messages(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => parseCriLogLine(l)?.message ?? `unparsed: ${l}`);
}

async function waitExited(containerId: string): Promise<void> {
  await waitFor(async () => {
    const s = (await h.client.containerStatus({ containerId })).status;
    return s?.state === ContainerState.CONTAINER_EXITED ? true : undefined;
  }, `exit of ${containerId}`);
}

/** A command that logs `before`, waits until /tmp/go exists, then logs `after`. */
function gated(before: string[], after: string[], then = 'sleep 3600'): string[] {
  const echo = (lines: string[]) => lines.map((l) => `echo ${l}; `).join('');
  return ['sh', '-c', `${echo(before)}while [ ! -e /tmp/go ]; do sleep 0.05; done; ${echo(after)}${then}`];
}

/** Opens the gate through Docker itself, so it works while no shim runs. */
async function openGate(containerId: string): Promise<void> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: ['touch', '/tmp/go'] });
  await exec.start({ Detach: true });
}

describe('log file', () => {
  it('exists when StartContainer returns and keeps the output of a container that exits at once', async () => {
    const { podId, config } = await h.runPod();
    for (let i = 0; i < 5; i++) {
      const id = await h.runContainer(podId, config, `quick${i}`, {
        command: ['sh', '-c', `echo quick${i}`],
      });
      const path = join(config.logDirectory as string, `quick${i}/0.log`);
      await expect(access(path)).resolves.toBeUndefined();
      await waitExited(id);
      expect(await messages(path)).toEqual([`quick${i}`]);
    }
  });

  it('rotates as kubelet does: rename, reopen, every line once across both files', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'rot', {
      command: [
        'sh',
        '-c',
        'i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo line$i; sleep 0.02; done; sleep 3600',
      ],
    });
    const path = join(config.logDirectory as string, 'rot/0.log');
    await waitFor(async () => ((await messages(path)).length >= 5 ? true : undefined), 'first lines');
    const rotated = `${path}.20260101-000000`;
    await rename(path, rotated);
    await h.client.reopenContainerLog({ containerId: id });
    await expect(access(path)).resolves.toBeUndefined();
    await waitFor(async () => ((await messages(path)).at(-1) === 'line40' ? true : undefined), 'line40');
    const all = [...(await messages(rotated)), ...(await messages(path))];
    expect(all).toEqual(Array.from({ length: 40 }, (_, i) => `line${i + 1}`));
  });

  it('resumes a rotated log after a shim restart without copying the rotated lines again', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'rotrestart', { command: gated(['a', 'b'], ['c']) });
    const path = join(config.logDirectory as string, 'rotrestart/0.log');
    await waitFor(async () => ((await messages(path)).length === 2 ? true : undefined), 'a and b');
    await rename(path, `${path}.20260101-000000`);
    await h.client.reopenContainerLog({ containerId: id });
    await h.stopShim();
    await h.startShim();
    await openGate(id);
    await waitFor(async () => ((await messages(path)).length > 0 ? true : undefined), 'c');
    await new Promise((r) => setTimeout(r, 300));
    expect(await messages(path)).toEqual(['c']);
    expect(await messages(`${path}.20260101-000000`)).toEqual(['a', 'b']);
  });

  it('gets the output of a container that exited while no shim ran, and leaves removed logs removed', async () => {
    const { podId, config } = await h.runPod();
    const kept = await h.runContainer(podId, config, 'kept', { command: gated(['a'], ['b', 'c'], 'true') });
    const gone = await h.runContainer(podId, config, 'gone', { command: gated(['x'], ['y'], 'true') });
    const keptPath = join(config.logDirectory as string, 'kept/0.log');
    const gonePath = join(config.logDirectory as string, 'gone/0.log');
    await waitFor(async () => ((await messages(keptPath)).length === 1 ? true : undefined), 'a');
    await waitFor(async () => ((await messages(gonePath)).length === 1 ? true : undefined), 'x');
    await h.stopShim();
    await openGate(kept);
    await openGate(gone);
    for (const c of [kept, gone]) {
      await waitFor(
        async () => ((await docker.getContainer(c).inspect()).State.Running ? undefined : true),
        'exit',
      );
    }
    await rm(gonePath);
    await h.startShim();
    await waitExited(kept);
    expect(await messages(keptPath)).toEqual(['a', 'b', 'c']);
    await waitExited(gone);
    await expect(stat(gonePath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("refuses to reopen another shim's container log", async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'owned');
    const other = await DockerShim.start({
      dockerEndpoint: ENGINE_ENDPOINT,
      socketPath: join(h.dir, 'other.sock'),
      podInfraContainerImage: h.images.pause,
      log: () => undefined,
    });
    try {
      const client = await CriClient.connect(other.endpoint);
      try {
        await expect(client.reopenContainerLog({ containerId: id })).rejects.toBeInstanceOf(
          FailedPreconditionError,
        );
      } finally {
        client.close();
      }
    } finally {
      await other.close();
    }
  });
});
