import { describe, expect, test } from 'vitest';
import { ensureImages, KhContainer, khLabels } from '../src/index.js';
import { docker } from '../src/util/docker.js';

// KhContainer, as other packages use it from the public API: a base for their own containers.
describe('KhContainer', () => {
  test('never pulls: an image the host engine lacks fails at once', async () => {
    await expect(new KhContainer('kubelet-harness/no-such-image:0').start()).rejects.toThrow(
      /does not exist locally/,
    );
  });

  test('applies raw engine settings testcontainers has no method for', async () => {
    const { busybox } = await ensureImages(['busybox']);
    const started = await new KhContainer(busybox)
      .withLabels(khLabels('test'))
      .withCommand(['sleep', '300'])
      .withRawHostConfig({ Init: true, ShmSize: 8 * 1024 * 1024 })
      .withRawCreateOptions({ StopTimeout: 7 })
      .start();
    try {
      const info = await docker().getContainer(started.getId()).inspect();
      expect(info.HostConfig.Init).toBe(true);
      expect(info.HostConfig.ShmSize).toBe(8 * 1024 * 1024);
      expect((info.Config as { StopTimeout?: number }).StopTimeout).toBe(7);
    } finally {
      await docker().getContainer(started.getId()).remove({ force: true, v: true });
    }
  });
});
