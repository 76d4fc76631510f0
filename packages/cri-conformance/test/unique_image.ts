import type { StartedRegistryContainer } from '@kh/testkit';
import type Dockerode from 'dockerode';

/**
 * Pushes an image of its own (a commit of `base`, so it has its own id) to a registry as `repoTag`.
 * RemoveImage removes every name of an image id, so pulling and removing a copy of a shared test
 * image would take the shared image with it.
 */
export async function pushUniqueImage(
  docker: Dockerode,
  base: string,
  runId: string,
  target: StartedRegistryContainer,
  repoTag: string,
): Promise<void> {
  const labels = { 'kh.run': runId, 'kh.owner': 'test' };
  const scratch = await docker.createContainer({ Image: base, Labels: labels });
  const repo = `kh-conformance/pullme-${runId}`;
  try {
    await scratch.commit({ repo, tag: 'v1', changes: [`LABEL kh.run=${runId}`] });
    await target.push(`${repo}:v1`, repoTag);
  } finally {
    await scratch.remove({ force: true });
    await docker
      .getImage(`${repo}:v1`)
      .remove({ force: true })
      .catch(() => undefined);
  }
}
