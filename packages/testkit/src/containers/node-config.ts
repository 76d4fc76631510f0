/**
 * Files written into a node container before it starts: the runtime's configuration, the CNI
 * network for pods and the registry mirror settings, all pointing at things the test run owns.
 */

/** Where a node's sockets live inside it; the directory is bind-mounted from a host temp dir. */
export const NODE_SHARED_DIR = '/run/kh';
/** The in-network name of a RegistryContainer; runtimes reach it over plain HTTP. */
export const REGISTRY_HOST = 'registry:5000';
/** Pods get addresses from here, inside their node's own network namespace. */
export const POD_SUBNET = '10.88.0.0/16';
/** dockerd's own bridge, away from 172.17/16 which the host engine already uses. */
export const DOCKER_BRIDGE_IP = '10.89.0.1/16';

export const CONTAINERD_CONFIG_PATH = '/etc/containerd/config.toml';

export function containerdConfig(options: { pauseImage: string; socketPath: string }): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = ${JSON.stringify(options.socketPath)}

[${cri}]
  sandbox_image = ${JSON.stringify(options.pauseImage)}
  # Without CAP_SYS_RESOURCE a negative oom_score_adj fails RunPodSandbox; clamp it instead.
  restrict_oom_score_adj = true
  # The node's capabilities and AppArmor come from the outer engine; do not load profiles here.
  disable_apparmor = true

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "/etc/cni/net.d"

[${cri}.registry]
  config_path = "/etc/containerd/certs.d"
`;
}

/** bridge + host-local + portmap: pods get IPs in the node's network namespace. */
export function cniConflist(): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'kh-pods',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }] },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/** containerd's per-registry host config: pull from the test registry over plain HTTP. */
export function registryHostsToml(host = REGISTRY_HOST): string {
  return `server = "http://${host}"

[host."http://${host}"]
  capabilities = ["pull", "resolve"]
`;
}

export function dockerdCommand(socketPath: string): string[] {
  return [
    'dockerd',
    '--host',
    `unix://${socketPath}`,
    '--insecure-registry',
    REGISTRY_HOST,
    '--bip',
    DOCKER_BRIDGE_IP,
    '--exec-opt',
    'native.cgroupdriver=cgroupfs',
  ];
}

/**
 * The pod cgroup root for a node: its own cgroup (from /proc/self/cgroup, read inside it) plus
 * "/kubepods", so pods nest under the node's cgroup and its memory limit applies to them.
 */
export function cgroupParentFrom(procSelfCgroup: string): string {
  const lines = procSelfCgroup.trim().split('\n');
  const pick = (pattern: RegExp) =>
    lines.map((l) => l.split(':')).find(([, ctrls]) => pattern.test(ctrls ?? ''));
  // cgroup v1: the memory controller's path; v2: the single unified "0::" line.
  const line = pick(/(^|,)memory(,|$)/) ?? pick(/^$/);
  const path = line?.slice(2).join(':');
  if (!path) throw new Error(`Cannot find the node's cgroup in /proc/self/cgroup:\n${procSelfCgroup}`);
  return `${path === '/' ? '' : path}/kubepods`;
}
