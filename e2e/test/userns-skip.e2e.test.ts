// security-context-userns reads the node's status.runtimeHandlers, as upstream's supportsUserNS
// does, and skips (never passes) where the default handler announces no user namespaces, with
// the runtime's name and version and what it announced. No containers: a stub context.
import { type ScenarioContext, ScenarioSkipped } from '@kh/harness';
import type { V1NodeRuntimeHandler } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { securityContextUserns } from '../src/scenarios/security-context.js';

function stubContext(runtimeHandlers: V1NodeRuntimeHandler[] | undefined): ScenarioContext {
  return {
    nodeName: 'node-a',
    namespace: 'ns',
    images: { busybox: 'busybox' },
    backend: { runtimeName: 'containerd', runtimeVersion: '1.7.24~ds1' },
    core: {
      readNode: async () => ({ status: runtimeHandlers ? { runtimeHandlers } : {} }),
      createNamespacedPod: () => Promise.reject(new Error('the scenario ran')),
      createNamespacedConfigMap: () => Promise.reject(new Error('the scenario ran')),
      createNamespacedSecret: () => Promise.reject(new Error('the scenario ran')),
    },
    skip: (reason: string) => {
      throw new ScenarioSkipped(reason);
    },
  } as unknown as ScenarioContext;
}

describe('security-context-userns', () => {
  const setup = (ctx: ScenarioContext) => securityContextUserns.setup!(ctx);

  it("skips with the runtime's reason where the default handler announces no user namespaces", async () => {
    await expect(
      setup(stubContext([{ name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: false } }])),
    ).rejects.toThrow(
      new ScenarioSkipped(
        'runtime containerd 1.7.24~ds1 does not support user namespaces: its default handler announces features.userNamespaces=false (node status.runtimeHandlers, from CRI Status)',
      ),
    );
    await expect(setup(stubContext(undefined))).rejects.toBeInstanceOf(ScenarioSkipped);
  });

  it('runs its cases where the default handler announces them', async () => {
    const ctx = stubContext([
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    ]);
    await expect(setup(ctx)).resolves.toBeUndefined();
    for (const c of securityContextUserns.cases) await expect(c.run(ctx)).rejects.toThrow('the scenario ran');
  });
});
