// security-context-userns reads the node's status.runtimeHandlers, as upstream's supportsUserNS
// does, and skips (never passes) where the default handler announces no user namespaces, with
// the runtime's name and version and what it announced. No containers: a stub context.
import { type ScenarioContext, ScenarioSkipped } from '@kh/harness';
import type { V1NodeRuntimeHandler } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeletUsernsMappings, securityContextUserns } from '../src/scenarios/security-context.js';

function stubContext(runtimeHandlers: V1NodeRuntimeHandler[] | undefined): ScenarioContext {
  return {
    nodeName: 'node-a',
    namespace: 'ns',
    images: { busybox: 'busybox' },
    backend: {
      runtimeName: 'containerd',
      runtimeVersion: '1.7.24~ds1',
      // A node with the kubelet's subordinate range, so the range case goes on to its pods.
      host: {
        exec: async (cmd: string[]) => ({
          exitCode: 0,
          output: cmd[0] === 'sh' ? '/usr/bin/getsubids\n' : '0: kubelet 65536 7208960\n',
        }),
      },
    },
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

describe("the node's kubelet range (upstream's kubeletUsernsMappings)", () => {
  /** A node whose commands answer from `answers` (joined argv → exit code and output). */
  const nodeWith = (answers: Record<string, [number, string]>) =>
    ({
      backend: {
        host: {
          exec: async (cmd: string[]) => {
            const [exitCode, output] = answers[cmd.join(' ')] ?? [127, 'not found'];
            return { exitCode, output };
          },
        },
      },
    }) as unknown as ScenarioContext;
  const line = '0: kubelet 65536 7208960\n';

  it('is the one range getsubids prints alike for UIDs and GIDs', async () => {
    const ctx = nodeWith({
      'sh -c command -v getsubids': [0, '/usr/bin/getsubids\n'],
      'getsubids kubelet': [0, line],
      'getsubids -g kubelet': [0, line],
    });
    expect(await kubeletUsernsMappings(ctx)).toEqual({ firstId: 65536, length: 7208960 });
  });

  it('is why upstream skips the case on a node that is not set up', async () => {
    expect(await kubeletUsernsMappings(nodeWith({}))).toBe('getsubids binary not found in PATH');
    const found = { 'sh -c command -v getsubids': [0, '/usr/bin/getsubids\n'] } as Record<
      string,
      [number, string]
    >;
    expect(
      await kubeletUsernsMappings(
        nodeWith({ ...found, 'getsubids kubelet': [1, 'Error fetching ranges\n'] }),
      ),
    ).toBe('no additional uids for user "kubelet": Error fetching ranges');
    expect(
      await kubeletUsernsMappings(
        nodeWith({
          ...found,
          'getsubids kubelet': [0, line],
          'getsubids -g kubelet': [0, '0: kubelet 131072 65536\n'],
        }),
      ),
    ).toBe('mismatched subuids and subgids for user "kubelet"');
  });
});
