import Dockerode from 'dockerode';

export const DEFAULT_DOCKER_ENDPOINT = 'unix:///var/run/docker.sock';

/** --docker-endpoint forms: unix:///path, /path, tcp://host:port (plain HTTP). */
export function dockerOptions(endpoint: string): Dockerode.DockerOptions {
  if (endpoint.startsWith('unix://')) return { socketPath: endpoint.slice('unix://'.length) };
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  if (endpoint.startsWith('tcp://') || endpoint.startsWith('http://')) {
    const url = new URL(endpoint.replace(/^tcp:/, 'http:'));
    return { protocol: 'http', host: url.hostname, port: Number(url.port || 2375) };
  }
  throw new Error(
    `unsupported docker endpoint ${JSON.stringify(endpoint)} (use unix:///path or tcp://host:port)`,
  );
}

export function connectDocker(endpoint: string = DEFAULT_DOCKER_ENDPOINT): Dockerode {
  return new Dockerode(dockerOptions(endpoint));
}
