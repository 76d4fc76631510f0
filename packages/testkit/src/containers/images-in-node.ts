import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { normalizeImageRef } from '@kh/apimachinery';
import { docker, requireHostImage } from '../util/docker.js';
import type { NodeRuntimeSpec } from './node-runtime.js';

/** What loading images needs of a node: a started node container is one. */
export interface ImageLoadTarget {
  readonly name: string;
  readonly runtime: Pick<NodeRuntimeSpec, 'importImages'>;
  /** The node's shared directory, seen from the host and from inside the node. */
  readonly sharedDirOnHost: string;
  readonly sharedDirInNode: string;
  execOk(cmd: string[]): Promise<string>;
}

/**
 * Copies images from the host engine into a node's runtime: `docker save` on the host into the
 * node's shared directory, then the runtime spec's import command inside the node (`ctr -n k8s.io
 * images import`, `docker load`). Returns the normalised names.
 */
export async function loadImages(node: ImageLoadTarget, refs: readonly string[]): Promise<string[]> {
  if (refs.length === 0) return [];
  for (const ref of refs) {
    await requireHostImage(ref);
  }
  const file = `images-${randomBytes(4).toString('hex')}.tar`;
  const onHost = join(node.sharedDirOnHost, file);
  try {
    // GET /images/get with several names: one tarball (dockerode has it, its types do not).
    const save = docker() as unknown as {
      getImages(opts: { names: string[] }): Promise<NodeJS.ReadableStream>;
    };
    await pipeline(await save.getImages({ names: [...refs] }), createWriteStream(onHost));
    const inNode = `${node.sharedDirInNode}/${file}`;
    await node.execOk(node.runtime.importImages(inNode));
  } finally {
    await rm(onHost, { force: true });
  }
  return refs.map(normalizeImageRef);
}
