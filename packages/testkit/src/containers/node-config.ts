import { join } from 'node:path';

/**
 * Files written into a node container before it starts: the runtime's configuration, the CNI
 * network for pods and the registry mirror settings, all pointing at things the test run owns.
 */

/** Where a node's sockets live inside it; the directory is bind-mounted from a host temp dir. */
export const NODE_SHARED_DIR = '/run/kh';
/** The in-network name of a RegistryContainer; runtimes reach it over plain HTTP. */
export const REGISTRY_HOST = 'registry:5000';
/**
 * A second registry name nodes trust for plain HTTP, for a registry that requires credentials
 * (RegistryContainer.withNetworkAlias): pulls from it need a pull secret, the open one's do not.
 */
export const PRIVATE_REGISTRY_HOST = 'private-registry:5000';
/** Every registry a node pulls from over plain HTTP. */
export const REGISTRY_HOSTS = [REGISTRY_HOST, PRIVATE_REGISTRY_HOST] as const;
/** Pods get addresses from here, inside their node's own network namespace. */
export const POD_SUBNET = '10.88.0.0/16';
/** dockerd's own bridge, away from 172.17/16 which the host engine already uses. */
export const DOCKER_BRIDGE_IP = '10.89.0.1/16';

export const CONTAINERD_CONFIG_PATH = '/etc/containerd/config.toml';

/**
 * containerd's config.toml. A node container owns containerd's standard paths; a HostContainerd
 * (`hostDir`) shares the host, so everything it keeps (root, state, runc state, opt, CNI config,
 * network namespaces) lives under its own directory, where stop() finds and removes it.
 */
export function containerdConfig(options: {
  pauseImage: string;
  socketPath: string;
  hostDir?: string;
}): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  const q = JSON.stringify;
  const { hostDir } = options;
  const own = (name: string, standard: string) => q(hostDir ? join(hostDir, name) : standard);
  const ifHost = (lines: string[]) => (hostDir ? lines : []);
  const ifNode = (lines: string[]) => (hostDir ? [] : lines);
  const sections: [string, string[]][] = [
    ['grpc', [`address = ${q(options.socketPath)}`]],
    ['plugins."io.containerd.internal.v1.opt"', ifHost([`path = ${own('opt', '')}`])],
    [
      cri,
      [
        `sandbox_image = ${q(options.pauseImage)}`,
        '# Without CAP_SYS_RESOURCE a negative oom_score_adj fails RunPodSandbox; clamp it instead.',
        'restrict_oom_score_adj = true',
        ...ifNode([
          "# The node's capabilities and AppArmor come from the outer engine; do not load profiles here.",
          'disable_apparmor = true',
        ]),
        ...ifHost([
          "# Network namespaces under our state dir instead of the host's shared /var/run/netns.",
          'netns_mounts_under_state_dir = true',
          'stream_server_address = "127.0.0.1"',
          'stream_server_port = "0"',
        ]),
      ],
    ],
    [`${cri}.containerd`, ['snapshotter = "overlayfs"', 'default_runtime_name = "runc"']],
    [`${cri}.containerd.runtimes.runc`, ['runtime_type = "io.containerd.runc.v2"']],
    [
      `${cri}.containerd.runtimes.runc.options`,
      [
        'SystemdCgroup = false',
        ...ifHost([
          "# runc's state under our dir, not the shared /run/containerd/runc/k8s.io: stop() finds our containers there.",
          `Root = ${own('runc', '')}`,
        ]),
      ],
    ],
    [
      `${cri}.cni`,
      [
        'bin_dir = "/usr/lib/cni"',
        `conf_dir = ${own('cni', '/etc/cni/net.d')}`,
        ...ifHost(['max_conf_num = 1']),
      ],
    ],
    [`${cri}.registry`, ifNode(['config_path = "/etc/containerd/certs.d"'])],
  ];
  const head = `version = 2\nroot = ${own('root', '/var/lib/containerd')}\nstate = ${own('state', '/run/containerd')}\n`;
  const toml = sections
    .filter(([, body]) => body.length > 0)
    .map(([name, body]) => `[${name}]\n${body.map((l) => `  ${l}\n`).join('')}`);
  return [head, ...toml].join('\n');
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
    ...REGISTRY_HOSTS.flatMap((host) => ['--insecure-registry', host]),
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

/** The node's main process (under tini): runs the runtime and survives it being stopped on purpose. */
export const NODE_INIT_PATH = '/usr/local/sbin/kh-node-init';
/** `kh-runtime stop|start|status` inside a node: `systemctl stop containerd` for a kind-style node. */
export const RUNTIME_CTL_PATH = '/usr/local/sbin/kh-runtime';
/** Where the two scripts keep the runtime's pid and the "stopped on purpose" flag. */
const RUNTIME_STATE_DIR = '/run';

/**
 * Runs the command given as arguments (the runtime) and waits for it. While the stop flag exists
 * the runtime stays down and the node lives on; an exit nobody asked for ends the node with the
 * runtime's code, so a crash is never hidden behind a restart.
 */
export function nodeInitScript(stateDir = RUNTIME_STATE_DIR): string {
  return `#!/bin/sh
flag=${stateDir}/kh-runtime.stopped
pidfile=${stateDir}/kh-runtime.pid
pid=
shutdown() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid"
  exit 0
}
trap shutdown TERM INT
while :; do
  if [ -e "$flag" ]; then
    sleep 0.2 &
    wait $!
    continue
  fi
  "$@" &
  pid=$!
  echo "$pid" > "$pidfile"
  wait "$pid"
  code=$?
  pid=
  rm -f "$pidfile"
  if [ ! -e "$flag" ]; then
    echo "kh-node-init: $1 exited with code $code without kh-runtime stop; the node ends" >&2
    exit "$code"
  fi
  echo "kh-node-init: $1 stopped (exit $code); waiting for kh-runtime start" >&2
done
`;
}

/** Stops (SIGTERM, SIGKILL after 30 s) or starts the runtime that kh-node-init supervises. */
export function runtimeCtlScript(stateDir = RUNTIME_STATE_DIR): string {
  return `#!/bin/sh
flag=${stateDir}/kh-runtime.stopped
pidfile=${stateDir}/kh-runtime.pid
case "$1" in
stop)
  touch "$flag"
  pid=$(cat "$pidfile" 2>/dev/null) || exit 0
  kill -TERM "$pid" 2>/dev/null || exit 0
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -eq 300 ]; then echo "kh-runtime: $pid ignored SIGTERM for 30s; killing it" >&2; kill -KILL "$pid"; fi
    sleep 0.1
  done
  ;;
start)
  rm -f "$flag"
  i=0
  until [ -s "$pidfile" ]; do
    i=$((i + 1))
    if [ "$i" -eq 100 ]; then echo "kh-runtime: the runtime did not start within 10s" >&2; exit 1; fi
    sleep 0.1
  done
  ;;
status)
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then echo running; else echo stopped; exit 3; fi
  ;;
*)
  echo "usage: kh-runtime stop|start|status" >&2
  exit 2
  ;;
esac
`;
}

/** The runtime a node runs: containerd, or dockerd with the dockershim serving CRI. */
export type NodeRuntime = 'containerd' | 'docker';
