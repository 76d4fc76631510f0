// The sync scenarios through our dockershim, run from this checkout next to the dockerd of a
// testkit node container (the Docker of KH_NODE_RELEASE, default trixie's 26.1), on CNI with the
// node's pod CIDR. The agent runs on the host and shares the node's /run/kh; the host's engine only
// runs the node, so a bug of the host's Docker cannot redden these tests, and removing the node
// removes all they made.
import { nodeReleaseFromEnv } from '@kh/testkit';
import { afterAll, beforeAll, describe } from 'vitest';
import { type RuntimeNode, startRuntimeNode } from '../../bench/runtime_node.js';
import { ExponentialBackoff } from '../../src/util/backoff.js';
import { killAll, POD_IP_PATTERN, type RealRuntimeEnv, SkewClock, syncScenarios } from './scenarios.js';

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')(
  'runtime manager on the dockershim (dockerd in a node)',
  () => {
    let n: RuntimeNode;
    let env: RealRuntimeEnv;

    beforeAll(async () => {
      const clock = new SkewClock();
      n = await startRuntimeNode({
        runtime: 'docker',
        release: nodeReleaseFromEnv(),
        manager: { clock },
        progress: (l) => console.log(l),
      });
      env = {
        manager: n.manager,
        newManager: n.newManager,
        busybox: n.busybox,
        busyboxAlias: `docker.io/${n.busybox}`,
        podsDir: `${n.node.sharedDirOnHost}/pods`,
        podIpPattern: POD_IP_PATTERN,
        clock,
        backoff: new ExponentialBackoff({ initialMs: 10_000, maxMs: 300_000, clock }),
      };
    }, 300_000);
    afterAll(async () => {
      if (!n) return;
      await killAll(n.manager).catch(() => undefined);
      await n.stop();
    }, 120_000);

    syncScenarios(() => env);
  },
);
