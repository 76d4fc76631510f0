// Command-line flags with the kubelet's names and pflag's syntax (--name=value, --name value,
// --bool, --bool=false). Flags either set agent options or override KubeletConfiguration fields;
// the latter are applied over the --config file, as in the kubelet.
import { maxHeaderSize } from 'node:http';
import { isIP } from 'node:net';
import { ErrorList, type FieldError, qualifiedNameProblem } from '@kh/apimachinery';
import { parseDuration } from '../util/duration.js';
import type { PartialKubeletConfiguration } from './load.js';
import { LABEL_VALUE, LABEL_VALUE_HELP } from './schema.js';
import { IMAGE_GC_PERIOD_FLAG } from './test_only.js';
import type { KubeletConfiguration, Taint, TaintEffect } from './types.js';

export interface AgentOptions {
  kubeconfig: string;
  config: string;
  hostnameOverride: string;
  nodeIp: string;
  nodeLabels: Record<string, string>;
  rootDir: string;
  /** Where the self-signed serving certificate is written when tlsCertFile is unset. */
  certDir: string;
  /** Harness extension: file that receives one JSON line per CRI call (empty: off). */
  criCallLog: string;
  /** The sandbox image image GC keeps (empty: ask the runtime). */
  podInfraContainerImage: string;
  /** Harness extension: where a runtime that answers CRI Exec/Attach/PortForward with a bare path serves it. */
  runtimeStreamingAddress: string;
  /** Test-only (hidden): how often image GC runs; empty: the kubelet's 5 minutes. */
  imageGcPeriod: string;
  v: number;
  help: boolean;
  version: boolean;
}

type FlagKind =
  | 'string'
  | 'bool'
  | 'int'
  | 'float'
  | 'duration'
  | 'ipList'
  | 'list'
  | 'labels'
  | 'evictionMap'
  | 'keyValueMap'
  | 'taints';

interface FlagSpec {
  name: string;
  kind: FlagKind;
  help: string;
  /** Parsed but left out of --help, as pflag's MarkHidden. */
  hidden?: true;
  option?: keyof AgentOptions;
  config?: keyof KubeletConfiguration | 'anonymousAuth' | 'clientCAFile' | 'authorizationMode';
}

export const FLAGS: readonly FlagSpec[] = [
  {
    name: 'kubeconfig',
    kind: 'string',
    option: 'kubeconfig',
    help: 'Path to a kubeconfig file for the API server.',
  },
  {
    name: 'config',
    kind: 'string',
    option: 'config',
    help: 'Path to a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) file.',
  },
  {
    name: 'hostname-override',
    kind: 'string',
    option: 'hostnameOverride',
    help: 'Node name to use instead of the hostname.',
  },
  {
    name: 'node-ip',
    kind: 'string',
    option: 'nodeIp',
    help: 'IP address reported as the InternalIP (default: first non-loopback IPv4).',
  },
  {
    name: 'node-labels',
    kind: 'labels',
    option: 'nodeLabels',
    help: 'Labels to add when registering the node (key=value,...).',
  },
  {
    name: 'root-dir',
    kind: 'string',
    option: 'rootDir',
    help: 'Directory for agent state (default /var/lib/kubelet).',
  },
  {
    name: 'cert-dir',
    kind: 'string',
    option: 'certDir',
    help: 'Directory for the self-signed serving certificate (default <root-dir>/pki).',
  },
  {
    name: 'cri-call-log',
    kind: 'string',
    option: 'criCallLog',
    help: 'Harness extension, not a kubelet flag: append one JSON line per CRI call (start time, method, latency, gRPC code) to this file; rotated to <file>.1 at 32 MiB.',
  },
  {
    name: 'pod-infra-container-image',
    kind: 'string',
    option: 'podInfraContainerImage',
    help: 'The sandbox (pause) image, which image garbage collection never removes (default: the one the runtime reports in its verbose CRI Status).',
  },
  {
    name: 'runtime-streaming-address',
    kind: 'string',
    option: 'runtimeStreamingAddress',
    help: "Harness extension, not a kubelet flag: the runtime's streaming server (host:port or URL), against which a bare-path URL from CRI Exec, Attach or PortForward is resolved.",
  },
  {
    name: IMAGE_GC_PERIOD_FLAG,
    kind: 'duration',
    option: 'imageGcPeriod',
    hidden: true,
    help: "Test-only: how often image garbage collection runs, instead of the kubelet's fixed 5m.",
  },
  { name: 'v', kind: 'int', option: 'v', help: 'Log verbosity.' },
  { name: 'help', kind: 'bool', option: 'help', help: 'Show this help.' },
  { name: 'version', kind: 'bool', option: 'version', help: 'Print the version and exit.' },
  {
    name: 'container-runtime-endpoint',
    kind: 'string',
    config: 'containerRuntimeEndpoint',
    help: 'CRI runtime endpoint.',
  },
  {
    name: 'image-service-endpoint',
    kind: 'string',
    config: 'imageServiceEndpoint',
    help: 'CRI image endpoint (default: the runtime endpoint).',
  },
  {
    name: 'runtime-request-timeout',
    kind: 'duration',
    config: 'runtimeRequestTimeout',
    help: 'Timeout for CRI requests.',
  },
  {
    name: 'register-node',
    kind: 'bool',
    config: 'registerNode',
    help: 'Register the node with the API server.',
  },
  {
    name: 'register-with-taints',
    kind: 'taints',
    config: 'registerWithTaints',
    help: 'Taints to register with (key=value:Effect,...).',
  },
  { name: 'address', kind: 'string', config: 'address', help: 'IP address for the kubelet server.' },
  {
    name: 'port',
    kind: 'int',
    config: 'port',
    help: `Port of the kubelet server (HTTPS). Limits: request headers up to ${maxHeaderSize / 1024} KiB (431 beyond), all headers within 60 s and the whole request within 300 s; request bodies are never read; connections are not capped, and each exec, attach or port-forward session holds one.`,
  },
  {
    name: 'healthz-bind-address',
    kind: 'string',
    config: 'healthzBindAddress',
    help: 'IP address for the healthz server.',
  },
  {
    name: 'healthz-port',
    kind: 'int',
    config: 'healthzPort',
    help: 'Port of the healthz server (plain HTTP; 0 disables it), with the limits of --port.',
  },
  { name: 'tls-cert-file', kind: 'string', config: 'tlsCertFile', help: 'Serving certificate.' },
  { name: 'tls-private-key-file', kind: 'string', config: 'tlsPrivateKeyFile', help: 'Serving key.' },
  {
    name: 'anonymous-auth',
    kind: 'bool',
    config: 'anonymousAuth',
    help: 'Allow anonymous requests to the kubelet server (default false: a request without credentials gets 401).',
  },
  {
    name: 'client-ca-file',
    kind: 'string',
    config: 'clientCAFile',
    help: 'CA bundle; client certificates it signed authenticate as CN, in the groups O.',
  },
  {
    name: 'authorization-mode',
    kind: 'string',
    config: 'authorizationMode',
    help: 'AlwaysAllow or Webhook.',
  },
  { name: 'max-pods', kind: 'int', config: 'maxPods', help: 'Maximum pods on this node.' },
  {
    name: 'pod-manifest-path',
    kind: 'string',
    config: 'staticPodPath',
    help: 'Directory of static pod manifests.',
  },
  { name: 'sync-frequency', kind: 'duration', config: 'syncFrequency', help: 'Pod resync period.' },
  {
    name: 'node-status-update-frequency',
    kind: 'duration',
    config: 'nodeStatusUpdateFrequency',
    help: 'Node status computation period.',
  },
  { name: 'cluster-dns', kind: 'ipList', config: 'clusterDNS', help: 'DNS server IPs for pods.' },
  { name: 'cluster-domain', kind: 'string', config: 'clusterDomain', help: 'Cluster DNS domain.' },
  {
    name: 'eviction-hard',
    kind: 'evictionMap',
    config: 'evictionHard',
    help: 'Hard eviction thresholds (signal<value,...).',
  },
  {
    name: 'eviction-soft',
    kind: 'evictionMap',
    config: 'evictionSoft',
    help: 'Soft eviction thresholds (signal<value,...).',
  },
  {
    name: 'eviction-soft-grace-period',
    kind: 'keyValueMap',
    config: 'evictionSoftGracePeriod',
    help: 'Grace periods (signal=duration,...).',
  },
  {
    name: 'eviction-pressure-transition-period',
    kind: 'duration',
    config: 'evictionPressureTransitionPeriod',
    help: 'Time before leaving a pressure condition.',
  },
  {
    name: 'eviction-max-pod-grace-period',
    kind: 'int',
    config: 'evictionMaxPodGracePeriod',
    help: 'Longest grace period (s) of a pod killed for a soft threshold.',
  },
  {
    name: 'kube-reserved',
    kind: 'keyValueMap',
    config: 'kubeReserved',
    help: 'Resources reserved for Kubernetes daemons (cpu=100m,...).',
  },
  {
    name: 'system-reserved',
    kind: 'keyValueMap',
    config: 'systemReserved',
    help: 'Resources reserved for the system (cpu=100m,...).',
  },
  {
    name: 'enforce-node-allocatable',
    kind: 'list',
    config: 'enforceNodeAllocatable',
    help: 'What node allocatable limits: pods, system-reserved, kube-reserved, or none (default pods).',
  },
  {
    name: 'kube-reserved-cgroup',
    kind: 'string',
    config: 'kubeReservedCgroup',
    help: 'Existing cgroup that kube-reserved enforcement limits to --kube-reserved.',
  },
  {
    name: 'system-reserved-cgroup',
    kind: 'string',
    config: 'systemReservedCgroup',
    help: 'Existing cgroup that system-reserved enforcement limits to --system-reserved.',
  },
  {
    name: 'image-gc-high-threshold',
    kind: 'int',
    config: 'imageGCHighThresholdPercent',
    help: 'Disk usage percent that starts image GC.',
  },
  {
    name: 'image-gc-low-threshold',
    kind: 'int',
    config: 'imageGCLowThresholdPercent',
    help: 'Disk usage percent image GC frees down to.',
  },
  {
    name: 'serialize-image-pulls',
    kind: 'bool',
    config: 'serializeImagePulls',
    help: 'Pull one image at a time.',
  },
  { name: 'registry-qps', kind: 'float', config: 'registryPullQPS', help: 'Image pull rate limit.' },
  { name: 'registry-burst', kind: 'int', config: 'registryBurst', help: 'Image pull burst.' },
  {
    name: 'node-status-max-images',
    kind: 'int',
    config: 'nodeStatusMaxImages',
    help: 'Images reported in node status (-1: all).',
  },
  {
    name: 'cgroup-root',
    kind: 'string',
    config: 'cgroupRoot',
    help: 'Root cgroup for pods; with --cgroups-per-qos the pods go under <root>/kubepods.',
  },
  {
    name: 'cgroups-per-qos',
    kind: 'bool',
    config: 'cgroupsPerQOS',
    help: 'Create the QoS cgroups (kubepods, burstable, besteffort) and a cgroup per pod (default true).',
  },
  {
    name: 'pod-max-pids',
    kind: 'int',
    config: 'podPidsLimit',
    help: 'Max processes per pod (-1: unlimited).',
  },
];

export function defaultAgentOptions(): AgentOptions {
  return {
    kubeconfig: '',
    config: '',
    hostnameOverride: '',
    nodeIp: '',
    nodeLabels: {},
    rootDir: '/var/lib/kubelet',
    certDir: '',
    criCallLog: '',
    podInfraContainerImage: '',
    runtimeStreamingAddress: '',
    imageGcPeriod: '',
    v: 0,
    help: false,
    version: false,
  };
}

export interface ParsedFlags {
  options: AgentOptions;
  configOverrides: PartialKubeletConfiguration;
  errors: FieldError[];
}

export function parseFlags(argv: readonly string[]): ParsedFlags {
  const options = defaultAgentOptions();
  const overrides: Record<string, unknown> = {};
  const errs = new ErrorList();
  const byName = new Map(FLAGS.map((f) => [f.name, f]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(arg);
    if (!m || arg === '-' || arg === '--') {
      errs.invalid('<args>', arg, 'unexpected argument; the agent takes flags only');
      continue;
    }
    const name = m[1] as string;
    const spec = byName.get(name);
    if (!spec) {
      errs.unknown(`--${name}`);
      if (m[2] === undefined && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith('-')) i++;
      continue;
    }
    let raw = m[2];
    if (raw === undefined) {
      if (spec.kind === 'bool') raw = 'true';
      else if (i + 1 < argv.length) raw = argv[++i] as string;
      else {
        errs.required(`--${name}`, 'flag needs an argument');
        continue;
      }
    }
    const value = convert(spec, raw, errs);
    if (value === undefined) continue;
    if (spec.option) {
      (options as unknown as Record<string, unknown>)[spec.option] =
        spec.kind === 'labels' ? { ...options.nodeLabels, ...(value as Record<string, string>) } : value;
    } else if (spec.config === 'anonymousAuth') {
      overrides.authentication = {
        ...(overrides.authentication as object),
        anonymous: { enabled: value as boolean },
      };
    } else if (spec.config === 'clientCAFile') {
      overrides.authentication = {
        ...(overrides.authentication as object),
        x509: { clientCAFile: value as string },
      };
    } else if (spec.config === 'authorizationMode') {
      overrides.authorization = { mode: value };
    } else if (spec.config) {
      overrides[spec.config] = value;
    }
  }
  if (options.imageGcPeriod && parseDuration(options.imageGcPeriod) <= 0)
    errs.invalid(`--${IMAGE_GC_PERIOD_FLAG}`, options.imageGcPeriod, 'must be greater than 0');
  if (!options.certDir) options.certDir = `${options.rootDir.replace(/\/$/, '')}/pki`;
  return { options, configOverrides: overrides as PartialKubeletConfiguration, errors: errs.errors };
}

function convert(spec: FlagSpec, raw: string, errs: ErrorList): unknown {
  const field = `--${spec.name}`;
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'bool':
      if (raw === 'true' || raw === 'false') return raw === 'true';
      errs.invalid(field, raw, 'must be true or false');
      return undefined;
    case 'int':
      if (/^-?\d+$/.test(raw)) return Number(raw);
      errs.invalid(field, raw, 'must be an integer');
      return undefined;
    case 'float':
      if (raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
      errs.invalid(field, raw, 'must be a number');
      return undefined;
    case 'duration':
      // Validated with the rest of the configuration; checked here too so the flag is named.
      try {
        parseDuration(raw);
        return raw;
      } catch (e) {
        errs.invalid(field, raw, (e as Error).message);
        return undefined;
      }
    case 'ipList': {
      const ips = splitList(raw);
      const bad = ips.filter((ip) => !isIP(ip));
      if (bad.length === 0) return ips;
      errs.invalid(field, raw, `not IP addresses: ${bad.join(', ')}`);
      return undefined;
    }
    case 'list':
      return splitList(raw);
    case 'labels':
      return parseNodeLabels(raw, field, errs);
    case 'keyValueMap':
      return parseMap(raw, '=', field, errs);
    case 'evictionMap':
      return parseMap(raw, '<', field, errs);
    case 'taints':
      return parseTaints(raw, field, errs);
  }
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function parseMap(
  raw: string,
  sep: string,
  field: string,
  errs: ErrorList,
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const item of splitList(raw)) {
    const at = item.indexOf(sep);
    if (at <= 0) {
      errs.invalid(field, item, `must be of the form key${sep}value`);
      return undefined;
    }
    out[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return out;
}

// The kubelet may only set labels in the kubernetes.io / k8s.io namespaces from this list, so that
// a node cannot claim, for example, a node-role.
const ALLOWED_K8S_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.kubernetes.io/zone',
  'failure-domain.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
]);
const ALLOWED_K8S_PREFIXES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

function parseNodeLabels(raw: string, field: string, errs: ErrorList): Record<string, string> | undefined {
  const labels = parseMap(raw, '=', field, errs);
  if (!labels) return undefined;
  let ok = true;
  for (const [k, v] of Object.entries(labels)) {
    const keyProblem = qualifiedNameProblem(k);
    if (keyProblem) {
      errs.invalid(`${field}[${k}]`, k, keyProblem);
      ok = false;
    } else if (!LABEL_VALUE.test(v)) {
      errs.invalid(`${field}[${k}]`, v, LABEL_VALUE_HELP);
      ok = false;
    } else if (!nodeLabelAllowed(k)) {
      errs.invalid(
        `${field}[${k}]`,
        k,
        `unknown 'kubernetes.io' or 'k8s.io' label; allowed are ${[...ALLOWED_K8S_LABELS].join(', ')} and the prefixes ${ALLOWED_K8S_PREFIXES.join(', ')}`,
      );
      ok = false;
    }
  }
  return ok ? labels : undefined;
}

function nodeLabelAllowed(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return true;
  const ns = key.slice(0, slash);
  const isK8s = (d: string) => ns === d || ns.endsWith(`.${d}`);
  if (!isK8s('kubernetes.io') && !isK8s('k8s.io')) return true;
  if (ALLOWED_K8S_LABELS.has(key)) return true;
  return ALLOWED_K8S_PREFIXES.some((p) => ns === p || ns.endsWith(`.${p}`));
}

function parseTaints(raw: string, field: string, errs: ErrorList): Taint[] | undefined {
  const taints: Taint[] = [];
  for (const item of splitList(raw)) {
    const m = /^([^=:]+)(?:=([^:]*))?:(.+)$/.exec(item);
    if (!m) {
      errs.invalid(field, item, 'must be of the form key=value:Effect or key:Effect');
      return undefined;
    }
    const [, key, value, effect] = m as unknown as [string, string, string | undefined, string];
    taints.push({ key, ...(value !== undefined ? { value } : {}), effect: effect as TaintEffect });
  }
  // Keys, values and effects are checked with the configuration, under registerWithTaints[i].
  return taints;
}

export function flagsHelp(): string {
  const shown = FLAGS.filter((f) => !f.hidden);
  const width = Math.max(...shown.map((f) => f.name.length)) + 4;
  return shown.map((f) => `  --${f.name.padEnd(width)}${f.help}`).join('\n');
}
