// Docker Engine behind our dockershim: dockerd runs under the node's init (so it can be stopped
// and started again) and the dockershim (from the host checkout, on the host's Node) serves CRI
// next to it. One column per Debian release of the node image: docker-28, docker-26, docker-20.10.

import type { NodeRelease } from '@kh/testkit';
import { DOCKERSHIM_CNI_FLAGS, dockerRuntime } from '@kh/testkit';
import { inContainer } from '../node/project.js';
import { kindBackend } from './kind.js';
import { aliasesFor, COLUMN_RELEASES, RELEASE_RUNTIMES } from './releases.js';
import type { RuntimeBackend } from './types.js';

/**
 * How the dockershim networks pods: `cni` (cri-dockerd's default: the pause container on network
 * `none`, the node's CNI plugins give it an IP from the node's pod CIDR) or `docker` (Docker's own
 * bridge), which the columns do not use but `churn --network-plugin docker` compares against.
 */
export type DockerNetworkPlugin = 'cni' | 'docker';

/** The docker column of a node release. */
export function dockerBackend(
  release: NodeRelease,
  networkPlugin: DockerNetworkPlugin = 'cni',
): RuntimeBackend {
  const { docker, debian } = RELEASE_RUNTIMES[release];
  return kindBackend({
    name: `docker-${docker}`,
    aliases: aliasesFor(release, 'docker'),
    description: `dockerd ${docker} behind our dockershim, in a kind-style node container (Debian ${debian})`,
    capabilities: ['real-containers', 'memory-pressure', 'registry-pull', 'runtime-handler'],
    release,
    expectedVersion: docker,
    runtime: dockerRuntime(),
    shim: {
      name: 'dockershim',
      command: (node, ctx) =>
        inContainer('dockershim', [
          `--listen=${node.criEndpointInNode}`,
          `--docker-endpoint=${node.runtimeEndpointInNode}`,
          `--pod-infra-container-image=${ctx.images.pause}`,
          // The node lacks CAP_SYS_RESOURCE (PLATFORM.md): a negative oom_score_adj would fail.
          '--restrict-oom-score-adj',
          // Pods on CNI from the node's pod CIDR, as cri-dockerd's default.
          ...(networkPlugin === 'cni' ? DOCKERSHIM_CNI_FLAGS : ['--network-plugin=docker']),
        ]),
    },
  });
}

export const dockerBackends = COLUMN_RELEASES.map((release) => dockerBackend(release));
