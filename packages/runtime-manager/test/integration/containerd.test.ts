// The sync scenarios against real containerd (CRI v1) in a testkit node container; the agent
// runs on the host and shares the node's /run/kh for logs, termination messages and emptyDirs.
import { nodeReleaseFromEnv } from '@kh/testkit';
import { afterAll, beforeAll, describe } from 'vitest';
import { type RuntimeNode, startRuntimeNode } from '../../bench/runtime_node.js';
import { ExponentialBackoff } from '../../src/util/backoff.js';
import { killAll, POD_IP_PATTERN, type RealRuntimeEnv, SkewClock, syncScenarios } from './scenarios.js';

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')('runtime manager on real containerd', () => {
  let n: RuntimeNode;
  let env: RealRuntimeEnv;

  beforeAll(async () => {
    const clock = new SkewClock();
    n = await startRuntimeNode({
      runtime: 'containerd',
      release: nodeReleaseFromEnv(),
      manager: { clock },
      progress: (l) => console.log(l),
    });
    env = {
      manager: n.manager,
      newManager: n.newManager,
      busybox: n.busybox,
      busyboxAlias: n.busybox.replace(/^docker\.io\//, ''),
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
});
