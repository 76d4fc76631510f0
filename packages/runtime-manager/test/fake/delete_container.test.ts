// Runtime.deleteContainer, which the kubelet's pod container deletor calls when a container of
// an evicted or deleted pod dies: the container and its log go, and a container already gone is
// not an error.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h.stop();
});

it('removes an exited container with its log', async () => {
  h = await Harness.start();
  h.fake.addImage(IMAGE, 1000);
  h.fake.script.containerExit('app', { afterMs: 0, exitCode: 1 });
  const pod = makePod('done', [ctr('app')], { restartPolicy: 'Never' });
  await h.sync(pod);
  const [exited] = (await h.status(pod)).containerStatuses;
  expect(exited?.state).toBe('exited');
  const cri = h.clients[0]!;
  const logPath = (await cri.containerStatus({ containerId: exited!.id.id })).status?.logPath ?? '';
  expect(logPath.startsWith(h.logsDir)).toBe(true);
  // The fake runtime keeps logs in memory; put the file a real runtime would have written.
  await mkdir(dirname(logPath), { recursive: true });
  await writeFile(logPath, 'last words\n');

  await h.manager.deleteContainer(exited!.id);

  expect(h.fake.containers().map((c) => c.id)).not.toContain(exited?.id.id);
  expect(existsSync(logPath)).toBe(false);
  expect((await h.status(pod)).containerStatuses).toEqual([]);
  await expect(h.manager.deleteContainer(exited!.id)).resolves.toBeUndefined();
});
