import { join } from 'node:path';
import { normalizeImageRef } from '@kh/apimachinery';
import type { StartedNodeContainer, StartedRegistryContainer, StartedTestNetwork } from '@kh/testkit';
import type { ConformanceOptions } from '../src/index.js';
import { NODE_STREAMING_UNREACHABLE } from './expectations.js';

/** The name the pull cases find in the registry (pushed there with pushUniqueImage). */
export const REGISTRY_IMAGE = 'kh/busybox:conformance';

/**
 * The suite's options for a runtime in a node container on `network`, pulling REGISTRY_IMAGE from
 * `registry` with its basic-auth credentials: what every node-container run has in common.
 */
export function nodeSuiteOptions(o: {
  node: StartedNodeContainer;
  network: StartedTestNetwork;
  registry: StartedRegistryContainer;
  refs: { busybox: string; httpd: string };
  runId: string;
}): ConformanceOptions {
  const { node, registry } = o;
  return {
    endpoint: node.criEndpointOnHost,
    images: { busybox: normalizeImageRef(o.refs.busybox), httpd: normalizeImageRef(o.refs.httpd) },
    registry: { address: registry.networkAddress, image: REGISTRY_IMAGE, auth: registry.credentials },
    logDir: { runtime: join(node.sharedDirInNode, 'logs'), local: join(node.sharedDirOnHost, 'logs') },
    // Host ports live in the node's network namespace: reach them on the node's address.
    hostPortAddress: node.ipAddress(o.network),
    hostPortIp: '',
    // Pods nest under the node container's cgroup, as kubelet's cgroupRoot would place them.
    cgroupParent: node.cgroupParent,
    runId: o.runId,
    callTimeoutMs: 60_000,
    streamingUnreachable: NODE_STREAMING_UNREACHABLE,
  };
}
