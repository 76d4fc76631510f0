import { normalizeImageRef } from '@kh/apimachinery';
import type { StartedNodeContainer, StartedRegistryContainer, StartedTestNetwork } from '@kh/testkit';
import type { SuiteCliOptions } from '../src/index.js';

/** The name the pull cases find in the registry (pushed there with pushUniqueImage). */
export const REGISTRY_IMAGE = 'kh/busybox:conformance';

/**
 * The suite's options in a node container on `network` (runConformanceInNode), pulling
 * REGISTRY_IMAGE from `registry` with its credentials, if any: what every node run has in common.
 */
export function nodeSuiteOptions(o: {
  node: StartedNodeContainer;
  network: StartedTestNetwork;
  registry: StartedRegistryContainer;
  refs: { busybox: string; httpd: string };
}): Omit<SuiteCliOptions, 'endpoint'> {
  const { node, registry } = o;
  return {
    images: { busybox: normalizeImageRef(o.refs.busybox), httpd: normalizeImageRef(o.refs.httpd) },
    registry: {
      address: registry.networkAddress,
      image: REGISTRY_IMAGE,
      ...(registry.credentials ? { auth: registry.credentials } : {}),
    },
    // Host ports live in the node's network namespace: reach them on the node's address.
    hostPortAddress: node.ipAddress(o.network),
    hostPortIp: '',
    // Pods nest under the node container's cgroup, as kubelet's cgroupRoot would place them.
    cgroupParent: node.cgroupParent,
    callTimeoutMs: 60_000,
  };
}
