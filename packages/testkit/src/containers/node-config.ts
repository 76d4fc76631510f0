/**
 * What every kind-style node shares, whatever its runtime: the names of the run's registries and
 * networks, its init and runtime-control scripts and its pod cgroup root. Each runtime's own files
 * are in its spec (containerd-runtime.ts, docker-runtime.ts).
 */
import type { NodeFile } from './node-runtime.js';

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

/** The user whose subordinate IDs a kubelet gives its pods' user namespaces (`getsubids kubelet`). */
export const KUBELET_USER = 'kubelet';

/** A range of subordinate IDs: the first one and how many. */
export interface SubordinateIds {
  firstId: number;
  count: number;
}

/**
 * The range a node configures for its kubelet, as upstream's node e2e nodes do: from 65536, just
 * enough 65536-ID ranges for the kubelet's default 110 pods, so a pod mapped outside it is caught.
 */
export const KUBELET_SUBORDINATE_IDS: SubordinateIds = { firstId: 65536, count: 110 * 65536 };

/**
 * What configures a node's kubelet user namespace range: a system user `kubelet` (made at node
 * start, as the image has none) and its one range in /etc/subuid and /etc/subgid, where the
 * image's getsubids (shadow's `uidmap`) reads it.
 */
export function kubeletSubordinateIds(ids: SubordinateIds): { files: NodeFile[]; setup: string[] } {
  const entry = `${KUBELET_USER}:${ids.firstId}:${ids.count}\n`;
  return {
    files: [
      { target: '/etc/subuid', content: entry, mode: 0o644 },
      { target: '/etc/subgid', content: entry, mode: 0o644 },
    ],
    setup: [
      `id -u ${KUBELET_USER} >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin ${KUBELET_USER}`,
    ],
  };
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
/**
 * `kh-runtime stop|start|kill|status|stacks` inside a node: `systemctl stop containerd` for a
 * kind-style node; `stacks` asks the runtime for its goroutine dump (SIGUSR1).
 */
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
  # The flag is read before the pid file goes: \`kh-runtime kill\` waits for that file to go and
  # then starts the runtime, which removes the flag; read after, a kill would look like a crash.
  stopped=
  [ -e "$flag" ] && stopped=1
  rm -f "$pidfile"
  if [ -z "$stopped" ]; then
    echo "kh-node-init: $1 exited with code $code without kh-runtime stop; the node ends" >&2
    exit "$code"
  fi
  echo "kh-node-init: $1 stopped (exit $code); waiting for kh-runtime start" >&2
done
`;
}

/**
 * Stops (SIGTERM, SIGKILL after 30 s) or starts the runtime that kh-node-init supervises; `kill` is
 * a crash the supervisor answers at once with a restart, as systemd's Restart=always would: SIGKILL
 * (nothing flushed or cleaned up), then the runtime runs again.
 */
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
kill)
  pid=$(cat "$pidfile" 2>/dev/null) || { echo "kh-runtime: the runtime is not running" >&2; exit 1; }
  touch "$flag"
  kill -KILL "$pid" 2>/dev/null
  # Until the supervisor has reaped it and removed the pid file: then start runs a new one.
  while kill -0 "$pid" 2>/dev/null || [ -e "$pidfile" ]; do sleep 0.05; done
  exec "$0" start
  ;;
status)
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then echo running; else echo stopped; exit 3; fi
  ;;
stacks)
  # dockerd and containerd both dump every goroutine's stack on SIGUSR1 and carry on.
  pid=$(cat "$pidfile" 2>/dev/null) || { echo "kh-runtime: the runtime is not running" >&2; exit 1; }
  kill -USR1 "$pid"
  ;;
*)
  echo "usage: kh-runtime stop|start|kill|status|stacks" >&2
  exit 2
  ;;
esac
`;
}
