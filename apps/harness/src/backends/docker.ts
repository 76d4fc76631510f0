// Docker Engine behind our dockershim: dockerd runs under the node's init (so it can be stopped
// and started again) and the dockershim (from the host checkout, on the host's Node) serves CRI
// next to it.
import { DOCKERSHIM_CNI_FLAGS, dockerRuntime } from '@kh/testkit';
import { inContainer } from '../node/project.js';
import { kindBackend } from './kind.js';

export const dockerBackend = kindBackend({
  name: 'docker',
  description: 'dockerd 20.10 behind our dockershim, in a kind-style node container',
  capabilities: ['real-containers', 'memory-pressure', 'registry-pull', 'runtime-restart'],
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
        ...DOCKERSHIM_CNI_FLAGS,
      ]),
  },
});
