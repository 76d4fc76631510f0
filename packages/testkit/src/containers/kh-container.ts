import { demuxBuffer } from '@kh/apimachinery';
import type { ContainerCreateOptions, HostConfig } from 'dockerode';
import { GenericContainer, PullPolicy, type StartedTestContainer } from 'testcontainers';
import { docker, isNotFound } from '../util/docker.js';

/** HostConfig fields the engine accepts that @types/dockerode does not list. */
export type RawHostConfig = HostConfig & { CgroupnsMode?: 'host' | 'private' };

/**
 * A GenericContainer for the project's local images: it never pulls, never starts the Ryuk
 * reaper (its image cannot be pulled here; removeLeftovers and stop() clean up instead), and
 * accepts raw engine settings that testcontainers has no builder method for.
 */
export class KhContainer extends GenericContainer {
  constructor(image: string) {
    super(image);
    this.withPullPolicy(PullPolicy.neverPull()).withAutoCleanup(false);
  }

  withRawHostConfig(config: RawHostConfig): this {
    Object.assign(this.hostConfig, config);
    return this;
  }

  withRawCreateOptions(options: Partial<ContainerCreateOptions>): this {
    Object.assign(this.createOpts, options);
    return this;
  }
}

/**
 * Starts `container` (named `name`); if starting fails after creation (its wait strategy timed
 * out, say), the error carries the container's last output and the container is removed.
 */
export async function startOrRemove(container: KhContainer, name: string): Promise<StartedTestContainer> {
  try {
    return await container.start();
  } catch (err) {
    const logs = await containerLogTail(name);
    await removeContainer(name);
    throw new Error(`${name} did not start: ${(err as Error).message}\n${logs}`, { cause: err });
  }
}

export async function removeContainer(idOrName: string): Promise<void> {
  await docker()
    .getContainer(idOrName)
    .remove({ force: true, v: true })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}

/** The last lines of a container's output, for error messages. */
export async function containerLogTail(idOrName: string, lines = 30): Promise<string> {
  try {
    const buf = (await docker()
      .getContainer(idOrName)
      .logs({ stdout: true, stderr: true, tail: lines, follow: false })) as unknown as Buffer;
    return demuxBuffer(buf)
      .map((f) => f.payload.toString('utf8'))
      .join('')
      .trim();
  } catch (err) {
    return `(no logs: ${(err as Error).message})`;
  }
}
