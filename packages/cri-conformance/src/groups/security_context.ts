import { NamespaceMode } from '@kh/cri-api';
import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';
import { capabilitySet } from '../framework/proc_status.js';

const CAP_NET_ADMIN = 12n;
const capEff = (status: string) => capabilitySet(status, 'CapEff');

export const securityContext = defineGroup('security context', {
  'RunAsUser and RunAsGroup set the process ids': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'ids', {
      linux: { securityContext: { runAsUser: { value: 1001n }, runAsGroup: { value: 2002n } } },
    });
    expectEqual((await ctx.exec(id, ['sh', '-c', 'id -u; id -g'])).stdout, '1001\n2002\n', 'uid and gid');
  },

  'SupplementalGroups are added to the process': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'groups', {
      linux: { securityContext: { runAsUser: { value: 1001n }, supplementalGroups: [3003n, 4004n] } },
    });
    const groups = (await ctx.exec(id, ['id', '-G'])).stdout.trim().split(/\s+/);
    expectTrue(groups.includes('3003') && groups.includes('4004'), `id -G is ${groups.join(' ')}`);
  },

  'RunAsGroup without RunAsUser is rejected': async (ctx) => {
    const pod = await ctx.runPod();
    await expectFailure(
      ctx.createContainer(pod, 'group-only', {
        linux: { securityContext: { runAsGroup: { value: 2002n } } },
      }),
      'CreateContainer with only run_as_group',
    );
  },

  'ReadonlyRootfs true forbids writes to /, false allows them': async (ctx) => {
    const pod = await ctx.runPod();
    const ro = await ctx.startedContainer(pod, 'ro', {
      linux: { securityContext: { readonlyRootfs: true } },
    });
    const rw = await ctx.startedContainer(pod, 'rw', {
      linux: { securityContext: { readonlyRootfs: false } },
    });
    expectTrue(
      (await ctx.exec(ro, ['sh', '-c', 'touch /kh 2>/dev/null'])).exitCode !== 0,
      'wrote to a read-only rootfs',
    );
    expectEqual((await ctx.exec(rw, ['touch', '/kh'])).exitCode, 0, 'touch on a writable rootfs');
  },

  'capabilities can be added and dropped': async (ctx) => {
    const pod = await ctx.runPod();
    const added = await ctx.startedContainer(pod, 'add', {
      linux: { securityContext: { capabilities: { addCapabilities: ['NET_ADMIN'] } } },
    });
    const dropped = await ctx.startedContainer(pod, 'drop', {
      linux: { securityContext: { capabilities: { dropCapabilities: ['ALL'] } } },
    });
    const addedCaps = capEff((await ctx.exec(added, ['cat', '/proc/self/status'])).stdout);
    expectTrue((addedCaps >> CAP_NET_ADMIN) & 1n, `NET_ADMIN missing from CapEff ${addedCaps.toString(16)}`);
    expectEqual(
      capEff((await ctx.exec(dropped, ['cat', '/proc/self/status'])).stdout),
      0n,
      'CapEff after dropping ALL',
    );
  },

  'HostNetwork: a host-network pod sees the node interfaces, a pod-network pod only its own': async (ctx) => {
    const interfaces = async (id: string) =>
      (await ctx.exec(id, ['cat', '/proc/net/dev'])).stdout
        .split('\n')
        .slice(2)
        .map((l) => l.split(':')[0]?.trim())
        .filter((n): n is string => !!n)
        .sort();
    const hostPod = await ctx.runPod({
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
    });
    const podPod = await ctx.runPod();
    const onHost = await interfaces(
      await ctx.startedContainer(hostPod, 'hostnet', {
        linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
      }),
    );
    const inPod = await interfaces(await ctx.startedContainer(podPod, 'podnet'));
    expectEqual(inPod, ['eth0', 'lo'], 'interfaces of a pod-network pod');
    // The node has its pod bridge and the pods' veth ends besides lo and its uplink.
    expectTrue(onHost.length > 2, `a host-network pod sees only ${onHost.join(', ')}`);
    const { status } = await ctx.client.podSandboxStatus({ podSandboxId: hostPod.id });
    expectEqual(
      status?.linux?.namespaces?.options?.network,
      NamespaceMode.NODE,
      'namespace options in status',
    );
  },

  'PID namespace: pod-shared or per container': async (ctx) => {
    const pod = await ctx.runPod();
    const shared = await ctx.startedContainer(pod, 'pid-pod', {
      linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.POD } } },
    });
    const own = await ctx.startedContainer(pod, 'pid-container', {
      linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.CONTAINER } } },
    });
    const pid1 = async (id: string) =>
      (await ctx.exec(id, ['sh', '-c', "tr '\\0' ' ' < /proc/1/cmdline"])).stdout.trim();
    expectEqual(await pid1(own), 'sleep 3600', 'PID 1 of a container with its own PID namespace');
    expectTrue(
      (await pid1(shared)) !== 'sleep 3600',
      'PID 1 of a pod-shared PID namespace is the container itself',
    );
  },
});
