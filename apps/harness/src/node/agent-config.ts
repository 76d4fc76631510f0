// The KubeletConfiguration the harness gives every node. Kubernetes' defaults stay, except where a
// scenario would otherwise wait minutes for a timer whose length is not what it tests.
import type { PartialKubeletConfiguration } from '@kh/node-agent';
import type { KubeConfig } from '@kubernetes/client-node';

export interface AgentConfigInput {
  criEndpoint: string;
  /** The node container's own cgroup: the agent's kubepods tree goes under it, so the node's memory limit bounds its pods. */
  cgroupRoot?: string;
  /** Path on the node of the CA that signed the apiserver's kubelet client certificate. */
  clientCAFile?: string;
  /** Directory on the node whose manifests are static pods (as the node e2e suite's kubelet has one). */
  staticPodPath?: string;
  overrides?: PartialKubeletConfiguration;
}

/** The kubelet's default healthz port, which the harness keeps: scenarios check it to know the agent started. */
export const AGENT_HEALTHZ_PORT = 10248;

export function kubeletConfiguration({
  criEndpoint,
  cgroupRoot,
  clientCAFile,
  staticPodPath,
  overrides = {},
}: AgentConfigInput): PartialKubeletConfiguration {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: '0.0.0.0',
    port: 10250,
    healthzBindAddress: '127.0.0.1',
    healthzPort: AGENT_HEALTHZ_PORT,
    // As a kubeadm node: the apiserver authenticates with its client certificate (exec, logs,
    // port-forward through the API); any other caller needs a token the apiserver's TokenReview
    // accepts and a SubjectAccessReview allowing the nodes/* subresource.
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      ...(clientCAFile ? { x509: { clientCAFile } } : {}),
    },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: criEndpoint,
    nodeStatusUpdateFrequency: '10s',
    nodeStatusReportFrequency: '1m',
    nodeLeaseDurationSeconds: 40,
    syncFrequency: '1m',
    maxPods: 110,
    // memory.available keeps the kubelet default; disk thresholds are low so that a nearly full
    // developer disk does not put every node under DiskPressure before a scenario starts.
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '2%',
      'nodefs.inodesFree': '2%',
      'imagefs.available': '2%',
    },
    // 5m in Kubernetes; the eviction scenario watches the condition clear, so keep it short.
    evictionPressureTransitionPeriod: '20s',
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAge: '2m',
    serializeImagePulls: true,
    registryPullQPS: 5,
    registryBurst: 10,
    clusterDomain: 'cluster.local',
    ...(staticPodPath ? { staticPodPath } : {}),
    // A node without a cgroup of its own for its pods (the fake runtime's, the endpoint's host)
    // shares the host's tree: no kubepods tree at the host's root.
    ...(cgroupRoot ? { cgroupRoot } : { cgroupsPerQOS: false }),
    ...overrides,
  };
}

/** A kubeconfig file's text (JSON is YAML) for a node's agent. */
export function kubeconfigText(kc: KubeConfig): string {
  return `${kc.exportConfig()}\n`;
}
