import { Quantity } from '@kh/apimachinery';
import { CLUSTER_CIDR, NODE_CIDR_MASK_SIZE, type Scenario } from '@kh/harness';
import { inCidr } from '../support/cidr.js';
import { nodeLease, nodeLeaseUpstream } from '../support/node.js';

/** The Node and its Lease look as a kubelet makes them, and kubectl shows the node Ready. */
export const nodeRegistration: Scenario = {
  name: 'node-registration',
  estimateMs: 3_000,
  // Only its namespace's pods: it shares a node with other such cells.
  isolation: 'namespace',
  description:
    'Node labels, addresses, capacity, nodeInfo, images, daemonEndpoints, pod CIDR; Lease holder and owner; kubectl Ready',
  upstream: nodeLeaseUpstream(
    'the kubelet should create and update a lease in the kube-node-lease namespace',
    'should have OwnerReferences set',
  ),
  // Room for upstream's 5 min wait for the lease.
  timeoutMs: 420_000,
  async run(ctx) {
    const { check } = ctx;
    const node = await check.eventually(
      'node is registered',
      () => ctx.core.readNode({ name: ctx.nodeName }),
      (n) => !!n.metadata?.uid,
    );
    const labels = node.metadata?.labels ?? {};
    check.equal('label kubernetes.io/hostname', labels['kubernetes.io/hostname'], ctx.nodeName);
    check.equal('label kubernetes.io/os', labels['kubernetes.io/os'], 'linux');
    check.equal('label kubernetes.io/arch', labels['kubernetes.io/arch'], 'amd64');

    const addressTypes = (node.status?.addresses ?? []).map((a) => a.type).sort();
    check.ok(
      'addresses include InternalIP and Hostname',
      addressTypes.includes('InternalIP') && addressTypes.includes('Hostname'),
      addressTypes,
      ['Hostname', 'InternalIP'],
    );

    const cap = node.status?.capacity ?? {};
    const alloc = node.status?.allocatable ?? {};
    for (const r of ['cpu', 'memory', 'ephemeral-storage', 'pods']) {
      check.ok(`capacity.${r} set`, !!cap[r], cap[r], 'a quantity');
      check.ok(`allocatable.${r} set`, !!alloc[r], alloc[r], 'a quantity');
    }
    check.equal('capacity.pods is maxPods', cap.pods, '110');
    const mem = (q: string | undefined) => Number(Quantity.fromJSON(q ?? '0').value());
    // evictionHard memory.available<100Mi comes off allocatable, as on a real kubelet.
    check.ok(
      'allocatable.memory <= capacity.memory - 100Mi',
      mem(alloc.memory) <= mem(cap.memory) - 100 * 2 ** 20,
      { capacity: cap.memory, allocatable: alloc.memory },
    );
    if (ctx.backend.memoryLimitBytes) {
      check.equal(
        'capacity.memory is the node container limit',
        mem(cap.memory),
        ctx.backend.memoryLimitBytes,
      );
    }

    const info = node.status?.nodeInfo;
    const version = await ctx.cri.version();
    check.equal(
      'nodeInfo.containerRuntimeVersion matches CRI Version',
      info?.containerRuntimeVersion,
      `${version.runtimeName}://${version.runtimeVersion}`,
    );
    check.equal('nodeInfo.operatingSystem', info?.operatingSystem, 'linux');
    check.equal('nodeInfo.architecture', info?.architecture, 'amd64');
    for (const f of ['kubeletVersion', 'kernelVersion', 'osImage', 'bootID', 'machineID'] as const) {
      check.ok(`nodeInfo.${f} set`, !!info?.[f], info?.[f], 'non-empty');
    }
    check.equal(
      'daemonEndpoints.kubeletEndpoint.Port',
      node.status?.daemonEndpoints?.kubeletEndpoint?.Port,
      10250,
    );
    const images = await check.eventually(
      'node status lists images',
      async () => (await ctx.core.readNode({ name: ctx.nodeName })).status?.images ?? [],
      (imgs) => imgs.length > 0,
      { timeoutMs: 30_000 },
    );
    check.ok(
      'images have names and sizes',
      images.every((i) => (i.names?.length ?? 0) > 0 && (i.sizeBytes ?? 0) >= 0),
      images.slice(0, 3),
    );

    // A lease created before the Node existed gets its owner at a later renewal (every 10s).
    // node_lease.go allows 5 min for the lease to be there.
    const lease = await check.eventually(
      'lease exists in kube-node-lease with an owner',
      () => nodeLease(ctx),
      (l) => !!l.spec?.renewTime && (l.metadata?.ownerReferences?.length ?? 0) > 0,
      { timeoutMs: 5 * 60_000 },
    );
    check.equal('lease holderIdentity', lease.spec?.holderIdentity, ctx.nodeName);
    check.equal('lease durationSeconds', lease.spec?.leaseDurationSeconds, 40);
    const owner = lease.metadata?.ownerReferences?.[0];
    check.equal(
      'lease owner',
      { kind: owner?.kind, name: owner?.name, uid: owner?.uid },
      { kind: 'Node', name: ctx.nodeName, uid: node.metadata?.uid },
    );

    // kube-controller-manager's node IPAM (the apiserver's --allocate-node-cidrs) gave the node
    // its own subnet of the cluster CIDR; the runtime networks the node's pods from it.
    const { podCIDR = '', podCIDRs = [] } = (await ctx.core.readNode({ name: ctx.nodeName })).spec ?? {};
    check.ok(
      `spec.podCIDR is a /${NODE_CIDR_MASK_SIZE} of the cluster CIDR`,
      podCIDR.endsWith(`/${NODE_CIDR_MASK_SIZE}`) && inCidr(podCIDR.split('/')[0] ?? '', CLUSTER_CIDR),
      podCIDR,
      `x.y.z.0/${NODE_CIDR_MASK_SIZE} in ${CLUSTER_CIDR}`,
    );
    check.equal('spec.podCIDRs', podCIDRs, [podCIDR]);

    const out = await check.eventually(
      'kubectl get nodes shows Ready',
      () => ctx.kubectl(['get', 'node', ctx.nodeName, '--no-headers']),
      (r) => r.code === 0 && /\sReady\s/.test(r.stdout),
      { timeoutMs: 30_000, expected: `${ctx.nodeName}   Ready ...` },
    );
    ctx.note('kubectl get nodes', { stdout: out.stdout.trim() });
  },
};
