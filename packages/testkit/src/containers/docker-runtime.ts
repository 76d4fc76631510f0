import { CNI_CONF_TEMPLATE, CNI_CONF_TEMPLATE_PATH } from './cni.js';
import { PRECONFIGURED_RUNTIME_HANDLER } from './containerd-runtime.js';
import { DOCKER_BRIDGE_IP, REGISTRY_HOSTS } from './node-config.js';
import type { NodeRuntimeSpec } from './node-runtime.js';

// dockerd in a kind-style node. It has no CRI of its own: the dockershim serves CRI next to it
// (at sockets.cri), started by whoever runs the node, and brings its own sandbox image.

export function dockerdCommand(socketPath: string): string[] {
  return [
    'dockerd',
    '--host',
    `unix://${socketPath}`,
    ...REGISTRY_HOSTS.flatMap((host) => ['--insecure-registry', host]),
    '--bip',
    DOCKER_BRIDGE_IP,
    '--exec-opt',
    'native.cgroupdriver=cgroupfs',
    // A Docker runtime per RuntimeClass handler the dockershim may be asked for: runc by another name.
    '--add-runtime',
    `${PRECONFIGURED_RUNTIME_HANDLER}=runc`,
  ];
}

export function dockerRuntime(): NodeRuntimeSpec {
  return {
    name: 'docker',
    sockets: { runtime: 'docker.sock', cri: 'dockershim.sock' },
    preloadsSandboxImage: false,
    launch: ({ runtimeSocket }) => ({
      // For the dockershim's --cni-conf-template.
      files: [{ content: CNI_CONF_TEMPLATE, target: CNI_CONF_TEMPLATE_PATH }],
      env: { DOCKER_HOST: `unix://${runtimeSocket}` },
      command: dockerdCommand(runtimeSocket),
    }),
    ready: async (node) => {
      await node.execOk(['docker', 'version', '--format', '{{.Server.Version}}']);
    },
    importImages: (tar) => ['docker', 'load', '-i', tar],
    hasImage: (ref) => ['docker', 'image', 'inspect', '--format', '{{.Id}}', ref],
  };
}
