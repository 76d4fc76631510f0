// The same sync scenarios through our dockershim on the host's real dockerd. Every sandbox and
// container carries kh.run/kh.owner (extraLabels), and afterAll removes whatever is left.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '@kh/cri-api';
import { DockerShim } from '@kh/dockershim';
import { ensureImages, removeLeftovers } from '@kh/testkit';
import { afterAll, beforeAll, describe } from 'vitest';
import { KubeGenericRuntimeManager, type RuntimeManagerOptions } from '../../src/kuberuntime/manager.js';
import { ExponentialBackoff } from '../../src/util/backoff.js';
import { killAll, type RealRuntimeEnv, SkewClock, syncScenarios } from './scenarios.js';

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')(
  'runtime manager on the dockershim (real dockerd)',
  () => {
    const runId = `rm-${randomBytes(4).toString('hex')}`;
    const clients: CriClient[] = [];
    let shim: DockerShim | undefined;
    let dir: string;
    let env: RealRuntimeEnv;

    beforeAll(async () => {
      const refs = await ensureImages(['pause', 'busybox']);
      dir = await mkdtemp(join(tmpdir(), 'kh-rm-dockershim-'));
      shim = await DockerShim.start({
        socketPath: join(dir, 'dockershim.sock'),
        podInfraContainerImage: refs.pause,
        restrictOomScoreAdj: true,
        // Docker's bridge: the host has no CNI config.
        networkPlugin: 'docker',
        log: () => undefined,
      });
      const clock = new SkewClock();
      const newManager = async (extra: Partial<RuntimeManagerOptions> = {}) => {
        const cri = await CriClient.connect(shim!.endpoint, { timeoutMs: 60_000 });
        clients.push(cri);
        return KubeGenericRuntimeManager.create({
          cri,
          clock,
          podLogsRootDir: join(dir, 'logs'),
          podsDir: join(dir, 'pods'),
          extraLabels: { 'kh.run': runId, 'kh.owner': 'test' },
          ...extra,
        });
      };
      env = {
        manager: await newManager(),
        newManager,
        busybox: refs.busybox,
        busyboxAlias: `docker.io/${refs.busybox}`,
        podsDir: join(dir, 'pods'),
        podIpPattern: /^\d+\.\d+\.\d+\.\d+$/,
        clock,
        backoff: new ExponentialBackoff({ initialMs: 10_000, maxMs: 300_000, clock }),
      };
    }, 300_000);

    afterAll(async () => {
      if (env) await killAll(env.manager).catch(() => undefined);
      for (const c of clients) c.close();
      await shim?.close();
      // Safety net for anything a failed scenario left behind.
      await removeLeftovers({ runId });
      if (dir) await rm(dir, { recursive: true, force: true });
    }, 120_000);

    syncScenarios(() => env);
  },
);
