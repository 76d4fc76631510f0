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
