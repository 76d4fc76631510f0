import type { ContainerMetadata, PodSandboxMetadata } from '@kh/cri-api';

// Docker container names follow the dockershim convention so `docker ps` stays readable:
//   k8s_POD_<pod>_<namespace>_<uid>_<attempt>                 for a sandbox (pause) container
//   k8s_<container>_<pod>_<namespace>_<uid>_<attempt>         for an application container
// The metadata is also kept in a label (see labels.ts); the name is the fallback and the uniqueness key.
export const KUBE_PREFIX = 'k8s';
export const SANDBOX_CONTAINER_NAME = 'POD';
const DELIMITER = '_';

export function makeSandboxName(md: PodSandboxMetadata): string {
  return [KUBE_PREFIX, SANDBOX_CONTAINER_NAME, md.name, md.namespace, md.uid, String(md.attempt)].join(
    DELIMITER,
  );
}

export function makeContainerName(sandbox: PodSandboxMetadata, container: ContainerMetadata): string {
  return [
    KUBE_PREFIX,
    container.name,
    sandbox.name,
    sandbox.namespace,
    sandbox.uid,
    String(container.attempt),
  ].join(DELIMITER);
}

function splitName(name: string): string[] {
  const parts = name.replace(/^\//, '').split(DELIMITER);
  if (parts.length !== 6 || parts[0] !== KUBE_PREFIX) {
    throw new Error(`container name ${JSON.stringify(name)} is not a kubernetes-managed name`);
  }
  return parts;
}

function parseAttempt(value: string, name: string): number {
  if (!/^\d+$/.test(value)) throw new Error(`container name ${JSON.stringify(name)} has a bad attempt`);
  return Number(value);
}

export function parseSandboxName(name: string): PodSandboxMetadata {
  const [, , pod = '', namespace = '', uid = '', attempt = ''] = splitName(name);
  return { name: pod, namespace, uid, attempt: parseAttempt(attempt, name) };
}

export function parseContainerName(name: string): ContainerMetadata {
  const [, container = '', , , , attempt = ''] = splitName(name);
  return { name: container, attempt: parseAttempt(attempt, name) };
}
