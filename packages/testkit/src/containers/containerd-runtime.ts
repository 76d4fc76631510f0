import { join } from 'node:path';
import { normalizeImageRef } from '@kh/apimachinery';
import { CNI_CONF_TEMPLATE, CNI_CONF_TEMPLATE_PATH } from './cni.js';
import { criVersion } from './cri-probe.js';
import { REGISTRY_HOST, REGISTRY_HOSTS } from './node-config.js';
import type { NodeFile, NodeRuntimeSpec } from './node-runtime.js';

// containerd with its built-in CRI plugin: its config.toml, the CNI network for pods and the
// registry settings, all pointing at things the test run owns.

/** The runc v2 shim; other OCI runtimes run through it with options.BinaryName. */
const RUNC_SHIM = 'io.containerd.runc.v2';

/**
 * The runtime handler upstream's e2e expects every node's runtime to have besides the default
 * (its PreconfiguredRuntimeClassHandler): plain runc under another name, which RuntimeClass cases
 * name. Both node runtimes configure it (containerd's config, dockerd's --add-runtime).
 */
export const PRECONFIGURED_RUNTIME_HANDLER = 'test-handler';

/** A containerd runtime handler: what a RuntimeClass's `handler` names. */
export interface ContainerdHandler {
  /** The shim (default io.containerd.runc.v2). */
  runtimeType?: string;
  /** The shim's options table, e.g. { BinaryName: '/usr/bin/crun' } for the runc shim. */
  options?: Readonly<Record<string, string | boolean | number>>;
}

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
  /** Runtime handlers next to runc (RuntimeClass handlers), by name. */
  handlers?: Readonly<Record<string, ContainerdHandler>>;
  /** The handler pods get when they name none (default runc). */
  defaultHandler?: string;
  /** See ContainerdRuntimeOptions.streamServerAddress. */
  streamServerAddress?: string;
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
          ...(options.streamServerAddress === undefined
            ? []
            : [`stream_server_address = ${q(options.streamServerAddress)}`]),
        ]),
        ...ifHost([
          "# Network namespaces under our state dir instead of the host's shared /var/run/netns.",
          'netns_mounts_under_state_dir = true',
          'stream_server_address = "127.0.0.1"',
          'stream_server_port = "0"',
        ]),
      ],
    ],
    [
      `${cri}.containerd`,
      ['snapshotter = "overlayfs"', `default_runtime_name = ${q(options.defaultHandler ?? 'runc')}`],
    ],
    // runc, and upstream's test handler as a second name for it (the same shim and options).
    ...['runc', q(PRECONFIGURED_RUNTIME_HANDLER)].flatMap((name): [string, string[]][] => [
      [`${cri}.containerd.runtimes.${name}`, [`runtime_type = ${q(RUNC_SHIM)}`]],
      [
        `${cri}.containerd.runtimes.${name}.options`,
        [
          'SystemdCgroup = false',
          ...ifHost([
            "# runc's state under our dir, not the shared /run/containerd/runc/k8s.io: stop() finds our containers there.",
            `Root = ${own('runc', '')}`,
          ]),
        ],
      ],
    ]),
    ...Object.entries(options.handlers ?? {}).flatMap(([name, h]): [string, string[]][] => [
      [`${cri}.containerd.runtimes.${q(name)}`, [`runtime_type = ${q(h.runtimeType ?? RUNC_SHIM)}`]],
      [
        `${cri}.containerd.runtimes.${q(name)}.options`,
        Object.entries(h.options ?? {}).map(([k, v]) => `${k} = ${q(v)}`),
      ],
    ]),
    [
      `${cri}.cni`,
      [
        'bin_dir = "/usr/lib/cni"',
        `conf_dir = ${own('cni', '/etc/cni/net.d')}`,
        ...ifHost(['max_conf_num = 1']),
        // A node's network config comes from its pod CIDR (UpdateRuntimeConfig), as on a real node.
        ...ifNode([`conf_template = ${q(CNI_CONF_TEMPLATE_PATH)}`]),
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

/** containerd's per-registry host config: pull from the test registry over plain HTTP. */
export function registryHostsToml(host = REGISTRY_HOST): string {
  return `server = "http://${host}"

[host."http://${host}"]
  capabilities = ["pull", "resolve"]
`;
}

/** Options for a containerd node; the defaults make the node the `containerd` column runs on. */
export interface ContainerdRuntimeOptions {
  /** Spec name (the node's kh.runtime label); default containerd. */
  name?: string;
  handlers?: Readonly<Record<string, ContainerdHandler>>;
  /** The handler pods without a RuntimeClass get (default runc). */
  defaultHandler?: string;
  /** Shell commands run in the node before containerd starts (see NodeRuntimeSpec.setup). */
  setup?: readonly string[];
  /** More files in the node (a handler's wrapper script, its config). */
  files?: readonly NodeFile[];
  /**
   * Where the CRI streaming server (the URLs of Exec, Attach, PortForward) listens. Default
   * containerd's, the node's loopback; '' is the node's own address (containerd picks the default
   * route's), which a process outside the node can reach.
   */
  streamServerAddress?: string;
}

/** containerd in a kind-style node; with handlers, more OCI runtimes behind the same CRI. */
export function containerdRuntime(options: ContainerdRuntimeOptions = {}): NodeRuntimeSpec {
  const sockets = { runtime: 'containerd.sock', cri: 'containerd.sock' } as const;
  return {
    name: options.name ?? 'containerd',
    sockets,
    ...(options.setup ? { setup: options.setup } : {}),
    preloadsSandboxImage: true,
    launch: ({ runtimeSocket, sandboxImage }) => {
      if (!sandboxImage) throw new Error('a containerd node needs its sandbox image');
      return {
        files: [
          {
            content: containerdConfig({
              pauseImage: normalizeImageRef(sandboxImage),
              socketPath: runtimeSocket,
              ...(options.handlers ? { handlers: options.handlers } : {}),
              ...(options.defaultHandler ? { defaultHandler: options.defaultHandler } : {}),
              ...(options.streamServerAddress === undefined
                ? {}
                : { streamServerAddress: options.streamServerAddress }),
            }),
            target: CONTAINERD_CONFIG_PATH,
          },
          { content: CNI_CONF_TEMPLATE, target: CNI_CONF_TEMPLATE_PATH },
          ...REGISTRY_HOSTS.map((host) => ({
            content: registryHostsToml(host),
            target: `/etc/containerd/certs.d/${host}/hosts.toml`,
          })),
          ...(options.files ?? []),
        ],
        env: { CONTAINERD_ADDRESS: runtimeSocket }, // so `ctr` inside talks to this containerd
        command: ['containerd', '--config', CONTAINERD_CONFIG_PATH],
      };
    },
    ready: async (node) => {
      await criVersion(join(node.sharedDirOnHost, sockets.cri));
    },
    // The CRI plugin's namespace: images imported elsewhere are invisible to pods.
    importImages: (tar) => ['ctr', '-n', 'k8s.io', 'images', 'import', tar],
    hasImage: (ref) => [
      'sh',
      '-c',
      'test -n "$(ctr -n k8s.io images ls -q "name==$0")"',
      normalizeImageRef(ref),
    ],
  };
}
