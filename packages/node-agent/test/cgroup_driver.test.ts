import { CgroupDriver, UnavailableError, UnimplementedError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { cgroupDriverFromCri } from '../src/runtime/cgroup_driver.js';
import type { Logger } from '../src/util/log.js';

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (m: string) => void lines.push(m),
    error: (m: string) => void lines.push(m),
    v: () => {},
  } as never;
}

/** A CRI RuntimeConfig that answers from a list, one answer per call. */
function runtime(...answers: (CgroupDriver | Error | 'no-linux')[]) {
  const calls: number[] = [];
  return {
    calls,
    runtimeConfig: async () => {
      calls.push(calls.length);
      const a = answers.shift();
      if (a instanceof Error) throw a;
      return a === 'no-linux' ? {} : { linux: { cgroupDriver: a ?? CgroupDriver.SYSTEMD } };
    },
  };
}

const noSleep = async () => {};

describe('cgroupDriverFromCri (KubeletCgroupDriverFromCRI)', () => {
  it("takes the runtime's driver over the configured one", async () => {
    const log = recordingLog();
    const cri = runtime(CgroupDriver.SYSTEMD);
    expect(await cgroupDriverFromCri(cri as never, { configured: 'cgroupfs', log, sleep: noSleep })).toBe(
      'systemd',
    );
    expect(
      await cgroupDriverFromCri(runtime(CgroupDriver.CGROUPFS) as never, { configured: 'systemd', log }),
    ).toBe('cgroupfs');
    expect(log.lines[0]).toContain('Using cgroup driver setting received from the CRI runtime');
  });

  it('falls back to the configured driver when the runtime answers UNIMPLEMENTED, without retrying', async () => {
    const log = recordingLog();
    const cri = runtime(new UnimplementedError('unknown method RuntimeConfig'));
    expect(await cgroupDriverFromCri(cri as never, { configured: 'systemd', log, sleep: noSleep })).toBe(
      'systemd',
    );
    expect(cri.calls).toHaveLength(1);
    expect(log.lines[0]).toContain('falling back to cgroupDriver from the kubelet config');
  });

  it('retries other errors, then succeeds or stops the start-up with the last error', async () => {
    const log = recordingLog();
    const slept: number[] = [];
    const sleep = async (ms: number) => void slept.push(ms);
    const flaky = runtime(new UnavailableError('starting'), CgroupDriver.CGROUPFS);
    expect(await cgroupDriverFromCri(flaky as never, { configured: 'systemd', log, sleep })).toBe('cgroupfs');
    expect(slept).toEqual([2_000]);
    const down = runtime(new UnavailableError('a'), new UnavailableError('b'), new UnavailableError('c'));
    await expect(cgroupDriverFromCri(down as never, { configured: 'systemd', log, sleep })).rejects.toThrow(
      'RuntimeConfig: c',
    );
    expect(down.calls).toHaveLength(3);
  });

  it('refuses an answer without linux configuration or with an unknown driver', async () => {
    const log = recordingLog();
    await expect(
      cgroupDriverFromCri(runtime('no-linux') as never, { configured: 'cgroupfs', log }),
    ).rejects.toThrow('did not include its linux configuration');
    await expect(
      cgroupDriverFromCri(runtime(7 as CgroupDriver) as never, { configured: 'cgroupfs', log }),
    ).rejects.toThrow('unknown cgroup driver 7');
  });
});
