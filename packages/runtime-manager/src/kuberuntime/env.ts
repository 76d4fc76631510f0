// A container's environment as the kubelet builds it: envFrom (config maps and secrets, with
// prefix), then env in order, where literal values expand $(VAR) over what came before (and the
// service variables, which follow unless the container set them itself) and
// valueFrom reads config map and secret keys, pod fields and container resources. The downward
// API volume shares the field and resource lookups.
import { Quantity } from '@kh/apimachinery';
import type { V1Container, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import { ErrCreateContainerConfig, SyncStepError } from '../container/sync_result.js';
import { type PodObjectSource, readObjectData } from './pod_objects.js';
import { serviceEnvVars, servicesForPod } from './service_env.js';

export interface EnvVar {
  name: string;
  value: string;
}

/** $(VAR) expansion as the API defines it: $$ escapes, unknown references stay as written. */
export function expandVars(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(/\$\$|\$\(([^)]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && vars.has(name) ? vars.get(name)! : m;
  });
}

const configError = (message: string) => new SyncStepError(ErrCreateContainerConfig, message);

/** Labels and annotations as a downward API file: sorted `key="value"` lines. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m![k])}`)
    .join('\n');
}

/** The metadata fields both envs and downward API volumes may name. */
export function metadataFieldValue(pod: V1Pod, path: string): string | undefined {
  const meta = pod.metadata ?? {};
  switch (path) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.annotations':
      return formatMap(meta.annotations);
  }
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (m[1] === 'labels' ? meta.labels : meta.annotations)?.[m[2]!] ?? '';
  return undefined;
}

/** The pod's host IPs: its status once posted, else the node's InternalIP (as the kubelet reads the node). */
async function hostIPs(pod: V1Pod, objects: PodObjectSource | undefined): Promise<string[]> {
  const fromStatus = (pod.status?.hostIPs ?? []).map((h) => h.ip).filter((ip): ip is string => !!ip);
  if (fromStatus.length > 0) return fromStatus;
  if (pod.status?.hostIP) return [pod.status.hostIP];
  const node = await objects?.getNode(pod);
  const addrs = node?.status?.addresses ?? [];
  const internal = addrs.filter((a) => a.type === 'InternalIP').map((a) => a.address);
  return internal.length > 0 ? internal : addrs.filter((a) => a.type === 'ExternalIP').map((a) => a.address);
}

async function envFieldValue(
  pod: V1Pod,
  path: string,
  podIPs: string[],
  objects: PodObjectSource | undefined,
): Promise<string> {
  // Whole label and annotation maps are volume-only fields.
  if (path !== 'metadata.labels' && path !== 'metadata.annotations') {
    const meta = metadataFieldValue(pod, path);
    if (meta !== undefined) return meta;
  }
  switch (path) {
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
      return podIPs[0] ?? '';
    case 'status.podIPs':
      return podIPs.join(',');
    case 'status.hostIP':
      return (await hostIPs(pod, objects))[0] ?? '';
    case 'status.hostIPs':
      return (await hostIPs(pod, objects)).join(',');
  }
  throw configError(`unsupported fieldRef "${path}"`);
}

/**
 * A container's resource as a downward API value: limits of cpu, memory and ephemeral storage
 * default to the node's allocatable (hugepages are never overcommitted, so an unset one is 0),
 * the result is divided by the divisor (default 1) and rounded up, as the kubelet does.
 */
export async function resourceFieldValue(
  pod: V1Pod,
  container: V1Container,
  ref: V1ResourceFieldSelector,
  objects: PodObjectSource | undefined,
): Promise<string> {
  const m = /^(limits|requests)\.(cpu|memory|ephemeral-storage|hugepages-.+)$/.exec(ref.resource);
  if (!m) throw configError(`unsupported container resource "${ref.resource}"`);
  const [, kind, name] = m as unknown as [string, 'limits' | 'requests', string];
  let raw: string | number | undefined = container.resources?.[kind]?.[name];
  if (raw === undefined && kind === 'limits' && !name.startsWith('hugepages-')) {
    const node = await objects?.getNode(pod);
    raw = node?.status?.allocatable?.[name];
    if (raw === undefined) throw configError(`node allocatable ${name} is unknown for ${ref.resource}`);
  }
  const q = raw === undefined ? Quantity.parse('0') : Quantity.fromJSON(raw);
  const divisor = ref.divisor === undefined ? Quantity.parse('1') : Quantity.fromJSON(ref.divisor);
  if (divisor.sign() <= 0) throw configError(`invalid divisor ${divisor.toString()} for ${ref.resource}`);
  const [num, den] = name === 'cpu' ? [q.milliValue(), divisor.milliValue()] : [q.value(), divisor.value()];
  return String((num + den - 1n) / den);
}

/**
 * IsRelaxedEnvVarName: printable ASCII but '=' (RelaxedEnvironmentVariableValidation, on by
 * default since 1.32, GA in 1.34), so an envFrom prefix like "1-" or "#@!" makes no key invalid.
 */
const ENV_NAME = /^[\x20-\x3c\x3e-\x7e]+$/;

/** The container's envs in order; a later definition of a name replaces the earlier value. */
export async function makeEnvironmentVariables(
  pod: V1Pod,
  container: V1Container,
  podIPs: string[],
  objects: PodObjectSource | undefined,
): Promise<EnvVar[]> {
  const vars = new Map<string, string>();
  const services = objects?.listServices ? servicesForPod(pod, await objects.listServices(pod)) : [];
  const serviceVars = serviceEnvVars(services);
  for (const src of container.envFrom ?? []) {
    const ref = src.configMapRef ?? src.secretRef;
    if (!ref?.name) continue;
    const kind = src.configMapRef ? 'configmap' : 'secret';
    const data = await readObjectData(objects, kind, pod, ref.name, ref.optional === true);
    // Keys that are no valid variable names are skipped, as the kubelet does.
    for (const [k, v] of data ?? []) {
      const name = `${src.prefix ?? ''}${k}`;
      if (ENV_NAME.test(name)) vars.set(name, v.toString('utf8'));
    }
  }
  const ns = pod.metadata?.namespace ?? '';
  for (const e of container.env ?? []) {
    const from = e.valueFrom;
    let value: string | undefined;
    if (!from) value = expandVars(e.value ?? '', new Map([...serviceVars, ...vars]));
    else if (from.fieldRef) value = await envFieldValue(pod, from.fieldRef.fieldPath, podIPs, objects);
    else if (from.resourceFieldRef) {
      const name = from.resourceFieldRef.containerName || container.name;
      const target = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
        (c) => c.name === name,
      );
      if (!target) throw configError(`env "${e.name}": container "${name}" not found in the pod`);
      value = await resourceFieldValue(pod, target, from.resourceFieldRef, objects);
    } else {
      const keyRef = from.configMapKeyRef ?? from.secretKeyRef;
      if (!keyRef) throw configError(`env "${e.name}": valueFrom names no source`);
      const kind = from.configMapKeyRef ? 'configmap' : 'secret';
      const optional = keyRef.optional === true;
      const data = await readObjectData(objects, kind, pod, keyRef.name ?? '', optional);
      if (!data) continue;
      const v = data.get(keyRef.key);
      if (v === undefined) {
        if (optional) continue;
        const what = kind === 'configmap' ? 'ConfigMap' : 'Secret';
        throw configError(`couldn't find key ${keyRef.key} in ${what} ${ns}/${keyRef.name}`);
      }
      value = v.toString('utf8');
    }
    vars.set(e.name, value);
  }
  // Service variables come last, under any the container sets itself.
  for (const [name, value] of serviceVars) if (!vars.has(name)) vars.set(name, value);
  return [...vars].map(([name, value]) => ({ name, value }));
}
