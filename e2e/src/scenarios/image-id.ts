import type { CasesScenario, ScenarioContext } from '@kh/harness';
import {
  createPod,
  finished,
  POD_START_MS,
  podFor,
  podLog,
  podSummary,
  sh,
  waitForPod,
  waitForSuccess,
} from '../support/pods.js';

// Upstream's image_id_test.go (test/e2e_node): a pod whose image is named by digest reports that
// digest, as the registry serves it, in its container status's imageID.
const FILE = 'test/e2e_node/image_id_test.go';

/** The manifest media types a runtime accepts, so that the registry serves the manifest as stored. */
const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/**
 * Upstream names busybox by a digest it knows beforehand. Ours is pushed by this run, so its
 * digest is read from the registry the nodes pull from, apart from the runtime and the agent:
 * the sha256 of the manifest bytes the registry serves for the tag (a host-network pod, which
 * resolves the registry's name as the node does).
 */
async function registryDigest(ctx: ScenarioContext, image: string): Promise<string> {
  const m = /^([^/]+)\/(.+):([^:/]+)$/.exec(image);
  if (!m) throw new Error(`${image} is not host/repository:tag`);
  const [, host, repo, tag] = m;
  const name = 'registry-digest';
  const url = `http://${host}/v2/${repo}/manifests/${tag}`;
  await createPod(
    ctx,
    podFor(ctx, name, {
      restartPolicy: 'Never',
      hostNetwork: true,
      containers: [sh(ctx, 'c', `wget -q -O - --header 'Accept: ${MANIFEST_TYPES}' '${url}' | sha256sum`)],
    }),
  );
  await waitForSuccess(ctx, name);
  const digest = (await podLog(ctx, name, 'c')).trim().split(/\s+/)[0] ?? '';
  if (!/^[0-9a-f]{64}$/.test(digest)) throw new Error(`no sha256 from ${url}: ${digest}`);
  return `sha256:${digest}`;
}

export const imageId: CasesScenario<void> = {
  name: 'image-id',
  estimateMs: 15_000,
  isolation: 'namespace',
  description:
    "image_id_test.go: a pod whose image is named by its manifest digest reports that repo digest in the container status's imageID",
  needs: ['real-containers'],
  // Room past upstream's 5 min wait (PodStart) for the digest pod before it.
  timeoutMs: 480_000,
  cases: [
    {
      name: 'ImageID should be set to the manifest digest (from RepoDigests) when available',
      file: FILE,
      tags: ['NodeFeature:ImageID', 'Feature:ImageID'],
      async run(ctx) {
        // Upstream's busybox, but our httpd image (busybox's sh with one more file): the run's
        // busybox is also the private registry's image, which other cells pull onto shared nodes,
        // and a runtime that knows one image under two repositories reports the repo digest it
        // lists first. Upstream's node knows its busybox under one name, as this node its httpd.
        const image = ctx.images.httpd;
        const byDigest = `${image.slice(0, image.lastIndexOf(':'))}@${await registryDigest(ctx, image)}`;
        const name = 'pod-with-repodigest';
        await createPod(
          ctx,
          podFor(ctx, name, {
            restartPolicy: 'Never',
            containers: [{ name: 'test', image: byDigest, command: ['sh'] }],
          }),
        );
        const pod = await waitForPod(ctx, name, 'is no longer running', finished, POD_START_MS);
        const statuses = pod.status?.containerStatuses ?? [];
        ctx.check.ok('the pod has a container status', statuses.length > 0, podSummary(pod));
        ctx.check.ok(
          "the container's imageID holds the image's repo digest",
          statuses[0]?.imageID?.includes(byDigest) === true,
          statuses[0]?.imageID,
          byDigest,
        );
      },
    },
  ],
};
