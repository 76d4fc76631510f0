import { type ContainerMetadata, InvalidArgumentError, type PodSandboxMetadata } from '@kh/cri-api';
import { parseContainerName, parseSandboxName } from './naming.js';

// Everything the shim needs to answer CRI calls is stored on the Docker container itself, so a restarted
// shim rebuilds all state from `docker ps` / `docker inspect` alone. These keys are internal: they are
// stripped from the labels a CRI client reads back.
export const LabelKeys = {
  /** 'podsandbox' or 'container': which CRI object a Docker container is. */
  containerType: 'io.kubernetes.docker.type',
  /** On application containers: the id of their sandbox (pause) container. */
  sandboxId: 'io.kubernetes.sandbox.id',
  /** On application containers: the absolute CRI log path the shim writes. */
  logPath: 'io.kubernetes.container.logpath',
  /**
   * On application containers: the endpoint of the shim that created them. A (re)started shim
   * resumes copying logs only for its own containers, so two shims on one engine (tests, a second
   * harness) never both write one log file.
   */
  shimInstance: 'io.kubernetes.cri.shim-instance',
  /** JSON of the CRI metadata (name, uid, namespace, attempt), exact even when names contain '_'. */
  metadata: 'io.kubernetes.cri.metadata',
  /** The image reference the client asked for, reported back in ImageSpec. */
  image: 'io.kubernetes.cri.image',
  /** Creation time in ns: Docker's list API only has seconds, and kubelet orders sandboxes by it. */
  createdAt: 'io.kubernetes.cri.created-at',
  /** On sandboxes: PodSandboxConfig.log_directory, the base of container log paths. */
  logDirectory: 'io.kubernetes.cri.log-directory',
  /** On sandboxes: RunPodSandboxRequest.runtime_handler. */
  runtimeHandler: 'io.kubernetes.cri.runtime-handler',
  /**
   * JSON list of the label keys the CRI client set. Docker mixes the image's own LABELs and the shim's
   * labels into one map; this says which of them are CRI labels.
   */
  labelKeys: 'io.kubernetes.cri.label-keys',
} as const;

export const ContainerType = { sandbox: 'podsandbox', container: 'container' } as const;
export type ContainerType = (typeof ContainerType)[keyof typeof ContainerType];

/** The labels kubelet sets on every pod object; the shim adds them when a client did not. */
export const KubernetesLabels = {
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUid: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
} as const;

/** CRI annotations live in Docker labels under this prefix (Docker has no annotations). */
export const ANNOTATION_PREFIX = 'annotation.';

const INTERNAL_KEYS = new Set<string>(Object.values(LabelKeys));

export interface DockerLabelInput {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Standard io.kubernetes.* labels to add when the client did not set them. */
  standard: Record<string, string>;
  /** Internal shim labels (LabelKeys values). */
  internal: Record<string, string>;
}

/** Merges CRI labels, annotations and the shim's own labels into one Docker label map. */
export function makeDockerLabels(input: DockerLabelInput): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.labels)) {
    if (INTERNAL_KEYS.has(k) || k.startsWith(ANNOTATION_PREFIX)) {
      throw new InvalidArgumentError(`label key ${JSON.stringify(k)} is reserved by the dockershim`);
    }
    out[k] = v;
  }
  for (const [k, v] of Object.entries(input.annotations)) out[ANNOTATION_PREFIX + k] = v;
  for (const [k, v] of Object.entries(input.standard)) {
    if (!(k in input.labels)) out[k] = v;
  }
  for (const [k, v] of Object.entries(input.internal)) out[k] = v;
  out[LabelKeys.labelKeys] = JSON.stringify(Object.keys(input.labels));
  return out;
}

/** Splits Docker labels back into exactly the CRI labels and annotations the client set. */
export function splitDockerLabels(dockerLabels: Record<string, string> | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  const all = dockerLabels ?? {};
  const keys = new Set<string>(JSON.parse(all[LabelKeys.labelKeys] ?? '[]') as string[]);
  for (const [k, v] of Object.entries(all)) {
    if (k.startsWith(ANNOTATION_PREFIX)) annotations[k.slice(ANNOTATION_PREFIX.length)] = v;
    else if (keys.has(k)) labels[k] = v;
  }
  return { labels, annotations };
}

export function sandboxMetadataFrom(labels: Record<string, string>, dockerName: string): PodSandboxMetadata {
  const raw = labels[LabelKeys.metadata];
  if (raw) {
    const md = JSON.parse(raw) as Partial<PodSandboxMetadata>;
    return {
      name: md.name ?? '',
      uid: md.uid ?? '',
      namespace: md.namespace ?? '',
      attempt: md.attempt ?? 0,
    };
  }
  return parseSandboxName(dockerName);
}

export function containerMetadataFrom(labels: Record<string, string>, dockerName: string): ContainerMetadata {
  const raw = labels[LabelKeys.metadata];
  if (raw) {
    const md = JSON.parse(raw) as Partial<ContainerMetadata>;
    return { name: md.name ?? '', attempt: md.attempt ?? 0 };
  }
  return parseContainerName(dockerName);
}

/** Docker label filters for a CRI label selector plus the object type. */
export function labelFilters(type: ContainerType, selector: Record<string, string> | undefined): string[] {
  const filters = [`${LabelKeys.containerType}=${type}`];
  for (const [k, v] of Object.entries(selector ?? {})) filters.push(`${k}=${v}`);
  return filters;
}

/** Creation time in ns from the shim's label, else Docker's (coarser) own value. */
export function createdAtFrom(labels: Record<string, string>, fallback: bigint): bigint {
  const raw = labels[LabelKeys.createdAt];
  return raw && /^\d+$/.test(raw) ? BigInt(raw) : fallback;
}
