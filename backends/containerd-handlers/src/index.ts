// containerd nodes whose pods run on another OCI runtime, through a containerd runtime handler:
// `containerd-<v>-crun` (crun) and `containerd-<v>-gvisor` (gVisor's runsc), from the Debian
// packages of each release's node image (the default release's columns also answer to
// `containerd-crun` and `containerd-gvisor`). The handler is containerd's default_runtime_name, so every pod of
// every scenario runs on it with no change to the scenarios; runc stays configured as a handler of
// its own, so a RuntimeClass naming `runc` still gets runc.
//
// Written against @kh/harness/backend only: the harness loads this module by name (kh.config.json,
// KH_BACKENDS or --backend) and registers what `backends` lists.
import { readFileSync } from 'node:fs';
import {
  aliasesFor,
  BackendUnavailableError,
  COLUMN_RELEASES,
  type ContainerdHandler,
  containerdRuntime,
  kindBackend,
  type NodeRelease,
  probePod,
  RELEASE_RUNTIMES,
  type RuntimeBackend,
} from '@kh/harness/backend';

const CAPABILITIES = ['real-containers', 'memory-pressure', 'registry-pull', 'runtime-handler'] as const;

/**
 * crun 1.8 refuses cgroup v1 with a cgroup2 mount beside it ("cgroups in hybrid mode not
 * supported, drop all controllers from cgroupv2"): the host has one at /sys/fs/cgroup/unified.
 * A private writable tmpfs hides it in the node's mount namespace. Unmounting it instead would
 * not do: crun still creates unified/docker/<node>/... from /proc/self/cgroup, and without a
 * mount there those directories land on the host's /sys/fs/cgroup tmpfs and outlive the node.
 */
const LEGACY_CGROUPS =
  'if mountpoint -q /sys/fs/cgroup/unified; then mount -t tmpfs -o rw,nosuid,nodev,noexec,mode=755 kh-cgroup2-hidden /sys/fs/cgroup/unified; fi';

/** Through the runc v2 shim with another binary; no systemd in the node, so cgroupfs paths. */
const viaRuncShim = (binary: string): ContainerdHandler => ({
  options: { BinaryName: binary, SystemdCgroup: false },
});

const column = (release: NodeRelease, handler: string) => {
  const { containerd, debian } = RELEASE_RUNTIMES[release];
  return {
    name: `containerd-${containerd}-${handler}`,
    aliases: aliasesFor(release, `containerd-${handler}`),
    release,
    expectedVersion: containerd,
    debian,
  };
};

export const crunBackend = (release: NodeRelease): RuntimeBackend => {
  const { debian, ...named } = column(release, 'crun');
  return kindBackend({
    ...named,
    description: `containerd ${named.expectedVersion} with crun (Debian ${debian}) as the default runtime handler`,
    capabilities: CAPABILITIES,
    runtime: containerdRuntime({
      name: named.name,
      handlers: { crun: viaRuncShim('/usr/bin/crun') },
      defaultHandler: 'crun',
      setup: [LEGACY_CGROUPS],
    }),
  });
};

/**
 * Debian's runsc comes without containerd-shim-runsc-v1, so it runs behind the runc v2 shim. The
 * wrapper (runsc-kh.sh, measured by hand in a node container) closes what that leaves open:
 * runsc's root-netns check (always true on kernel 6.x, so every sandbox is refused), the
 * subcontainers' stdio and exit status, and runsc's words for "not running".
 */
const RUNSC_WRAPPER = '/usr/local/bin/runsc-kh';

export const gvisorBackend = (release: NodeRelease): RuntimeBackend => {
  const { debian, ...named } = column(release, 'gvisor');
  return kindBackend({
    ...named,
    description: `containerd ${named.expectedVersion} with gVisor runsc (Debian ${debian}) as the default runtime handler`,
    // No memory-pressure: a memhog in a gVisor pod never brought the node to MemoryPressure in
    // 120 s (the sentry's memory is not the pod's as the node's cgroup counts it), and gVisor does
    // not enforce a container's own limit either; the eviction scenario is skipped, saying so.
    capabilities: CAPABILITIES.filter((c) => c !== 'memory-pressure'),
    runtime: containerdRuntime({
      name: named.name,
      handlers: { runsc: viaRuncShim(RUNSC_WRAPPER) },
      defaultHandler: 'runsc',
      setup: [LEGACY_CGROUPS],
      files: [
        {
          target: RUNSC_WRAPPER,
          content: readFileSync(new URL('../runsc-kh.sh', import.meta.url), 'utf8'),
          mode: 0o755,
        },
      ],
    }),
    // Should runsc still refuse this kernel or this node, no scenario could say anything about the
    // agent: the column is skipped with runsc's own error instead.
    async check(started, _node, ctx) {
      try {
        await probePod(started.hostCriEndpoint, {
          sandboxImage: ctx.images.pause,
          ...(started.cgroupParent ? { cgroupParent: started.cgroupParent } : {}),
        });
      } catch (err) {
        throw new BackendUnavailableError(`runsc cannot run a pod: ${(err as Error).message}`, {
          cause: err,
        });
      }
    },
  });
};

export const backends: readonly RuntimeBackend[] = [
  ...COLUMN_RELEASES.map(crunBackend),
  ...COLUMN_RELEASES.map(gvisorBackend),
];
