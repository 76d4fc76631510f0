import Docker from 'dockerode';

let client: Docker | undefined;

/** The host engine, from DOCKER_HOST or /var/run/docker.sock (dockerode's defaults). */
export function docker(): Docker {
  client ??= new Docker();
  return client;
}

/** Waits for a streamed engine response (import, save) to end, failing on an error message in it. */
export function followProgress(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    docker().modem.followProgress(stream, (err: Error | null, output: Array<{ error?: string }>) => {
      const failed = output?.find((o) => o.error);
      if (err) reject(err);
      else if (failed?.error) reject(new Error(failed.error));
      else resolve();
    });
  });
}

export function isNotFound(err: unknown): boolean {
  return (err as { statusCode?: number } | null)?.statusCode === 404;
}

/** Fails with what to do when `ref` is not in the host engine: nothing is ever pulled here. */
export async function requireHostImage(ref: string): Promise<void> {
  await docker()
    .getImage(ref)
    .inspect()
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
      throw new Error(
        `Image ${ref} is not in the host engine; build it with ensureImages() or \`npm run images\``,
      );
    });
}

/** Turns "connect ENOENT /var/run/docker.sock" into what to do about it. */
export function explainEngineError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== 'ENOENT' && code !== 'ECONNREFUSED' && code !== 'EACCES') return err;
  const where = process.env.DOCKER_HOST || '/var/run/docker.sock';
  return new Error(
    `Cannot reach the Docker engine at ${where} (${(err as Error).message}). ` +
      'Start it with `sudo npm run setup` (scripts/setup-host.sh), or run as a user allowed to use it.',
  );
}
