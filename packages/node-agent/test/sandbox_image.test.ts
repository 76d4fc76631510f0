import { describe, expect, it } from 'vitest';
import { runtimeSandboxImage } from '../src/runtime/sandbox_image.js';

const logged: string[] = [];
const log = { info: (m: string) => logged.push(m), error: (m: string) => logged.push(m), v() {} };
const statusWith = (info: Record<string, string>) => ({ status: async () => ({ info }) });

describe('runtimeSandboxImage', () => {
  it("reads containerd's sandboxImage and our dockershim's podInfraContainerImage", async () => {
    const containerd = statusWith({ config: JSON.stringify({ sandboxImage: 'registry.k8s.io/pause:3.9' }) });
    expect(await runtimeSandboxImage(containerd, log)).toBe('registry.k8s.io/pause:3.9');
    const shim = statusWith({ config: JSON.stringify({ podInfraContainerImage: 'kh/pause:1' }) });
    expect(await runtimeSandboxImage(shim, log)).toBe('kh/pause:1');
  });

  it('says so and gives up when the runtime does not tell, or its status fails', async () => {
    logged.length = 0;
    expect(await runtimeSandboxImage(statusWith({}), log)).toBeUndefined();
    const failing = {
      status: async () => {
        throw new Error('unavailable');
      },
    };
    expect(await runtimeSandboxImage(failing, log)).toBeUndefined();
    expect(logged).toEqual([
      'The runtime does not report its sandbox image; image GC may remove it',
      'Cannot read the sandbox image from the runtime status',
    ]);
  });
});
