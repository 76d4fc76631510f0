// The cgroup driver from the runtime (KubeletCgroupDriverFromCRI, on by default in kubelet 1.33):
// at start-up the kubelet asks CRI RuntimeConfig and uses the runtime's driver instead of its
// configured `cgroupDriver`, so the two cannot disagree. A runtime older than the call answers
// UNIMPLEMENTED and the configured driver stays. Any other failure is retried a few times (the
// runtime may still be starting), then stops the start-up, as the kubelet does.
import { CgroupDriver, type CriClient, isUnimplemented } from '@kh/cri-api';
import type { KubeletConfiguration } from '../config/types.js';
import type { Logger } from '../util/log.js';

type Driver = KubeletConfiguration['cgroupDriver'];

export interface CgroupDriverOptions {
  configured: Driver;
  log: Logger;
  /** Tries before giving up on errors other than UNIMPLEMENTED. Default 3. */
  attempts?: number;
  /** Between tries. Default 2 s. */
  retryDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export async function cgroupDriverFromCri(
  cri: Pick<CriClient, 'runtimeConfig'>,
  opts: CgroupDriverOptions,
): Promise<Driver> {
  const { attempts = 3, retryDelayMs = 2_000 } = opts;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let lastErr: unknown;
  for (let i = 0; i < attempts; i++) {
    let linux: Awaited<ReturnType<typeof cri.runtimeConfig>>['linux'];
    try {
      ({ linux } = await cri.runtimeConfig({}));
    } catch (err) {
      if (isUnimplemented(err)) {
        opts.log.info(
          'CRI implementation should be updated to support RuntimeConfig when KubeletCgroupDriverFromCRI is enabled; falling back to cgroupDriver from the kubelet config',
          { cgroupDriver: opts.configured },
        );
        return opts.configured;
      }
      lastErr = err;
      if (i + 1 < attempts) await sleep(retryDelayMs);
      continue;
    }
    // Without the linux part the driver would read as its zero value, systemd: refuse instead.
    if (!linux) throw new Error('RuntimeConfig: the runtime did not include its linux configuration');
    const driver = DRIVERS.get(linux.cgroupDriver);
    if (!driver)
      throw new Error(`RuntimeConfig: the runtime returned an unknown cgroup driver ${linux.cgroupDriver}`);
    opts.log.info('Using cgroup driver setting received from the CRI runtime', { cgroupDriver: driver });
    return driver;
  }
  throw new Error(`RuntimeConfig: ${(lastErr as Error).message}`);
}

const DRIVERS = new Map<CgroupDriver, Driver>([
  [CgroupDriver.SYSTEMD, 'systemd'],
  [CgroupDriver.CGROUPFS, 'cgroupfs'],
]);
