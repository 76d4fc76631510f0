#!/usr/bin/env node
// dockershim: serve CRI v1 on a unix socket, backed by Docker Engine.
import { parseArgs } from 'node:util';
import { CRI_MAX_REQUEST_BYTES } from '@kh/cri-api';
import {
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_REQUEST_TTL_MS,
  DEFAULT_STREAM_CREATION_TIMEOUT_MS,
  DEFAULT_STREAM_IDLE_TIMEOUT_MS,
} from '@kh/cri-streaming';
import { enterRuntimeCgroup } from './runtime_cgroups.js';
import { DEFAULT_CONFIG } from './shim/context.js';
import { connectDocker, DEFAULT_DOCKER_ENDPOINT } from './shim/docker_endpoint.js';
import { dockerMessage } from './shim/errors.js';
import { DEFAULT_STREAMING_ADDRESS, DockerShim } from './shim/service.js';

const mib = (bytes: number) => `${bytes / 2 ** 20} MiB`;

const USAGE = `Usage: dockershim --listen <unix:///path/to.sock> [options]

A CRI v1 runtime (RuntimeService + ImageService) that drives Docker Engine.

Options:
  --listen <endpoint>                    CRI socket to serve (unix:///path, /path, tcp://127.0.0.1:port)
                                         (default unix:///var/run/dockershim.sock)
  --docker-endpoint <endpoint>           Docker Engine API (default ${DEFAULT_DOCKER_ENDPOINT})
  --pod-infra-container-image <image>    sandbox (pause) image (default ${DEFAULT_CONFIG.podInfraContainerImage})
  --runtime-cgroups <cgroup>             absolute cgroup to move the shim into, e.g. /kh/runtime
  --network <name>                       Docker network of pods without host network (default ${DEFAULT_CONFIG.network})
  --restrict-oom-score-adj               never set oom_score_adj below the shim's own
                                         (for hosts without CAP_SYS_RESOURCE)
  --streaming-address <host:port>        address the streaming server (the URLs of CRI Exec, Attach,
                                         PortForward) binds to; port 0 takes a free one
                                         (default ${DEFAULT_STREAMING_ADDRESS}: loopback only, so only
                                         clients on this host can use the URLs)
  -h, --help                             show this help

Limits (each refusal says which):
  CRI requests up to ${mib(CRI_MAX_REQUEST_BYTES)} (bigger: RESOURCE_EXHAUSTED); responses, connections and
  calls in flight are not capped; a call lasts until the client's deadline. The socket is mode 0660.
  ExecSync keeps ${mib(DEFAULT_CONFIG.execOutputLimitBytes)} of stdout and stderr together.
  Streaming: ${DEFAULT_MAX_IN_FLIGHT} pending Exec/Attach/PortForward URLs, each valid ${DEFAULT_REQUEST_TTL_MS / 1000} s; a client
  has ${DEFAULT_STREAM_CREATION_TIMEOUT_MS / 1000} s to open its streams, and a session idle for ${DEFAULT_STREAM_IDLE_TIMEOUT_MS / 3_600_000} h is closed.

Networking: pods get Docker's own networking (the default bridge, or --network). No CNI plugin is
invoked; port mappings become Docker port bindings, the pod IP is the pause container's address.`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string', default: 'unix:///var/run/dockershim.sock' },
      'docker-endpoint': { type: 'string', default: DEFAULT_DOCKER_ENDPOINT },
      'pod-infra-container-image': { type: 'string', default: DEFAULT_CONFIG.podInfraContainerImage },
      'runtime-cgroups': { type: 'string' },
      network: { type: 'string', default: DEFAULT_CONFIG.network },
      'restrict-oom-score-adj': { type: 'boolean', default: false },
      'streaming-address': { type: 'string', default: DEFAULT_STREAMING_ADDRESS },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const endpoint = values['docker-endpoint'];
  const docker = connectDocker(endpoint);
  try {
    await docker.ping();
  } catch (err) {
    process.stderr.write(
      `dockershim: cannot reach Docker at ${endpoint}: ${dockerMessage(err)}\n` +
        'Is dockerd running, and may this user open its socket? (see --docker-endpoint)\n',
    );
    return 1;
  }
  if (values['runtime-cgroups']) {
    const files = await enterRuntimeCgroup(values['runtime-cgroups']);
    process.stderr.write(
      `dockershim: running in cgroup ${values['runtime-cgroups']} (${files.length} hierarchies)\n`,
    );
  }
  const listen = values.listen;
  const shim = await DockerShim.start({
    docker,
    ...(listen.startsWith('tcp://') ? { address: listen } : { socketPath: listen.replace(/^unix:\/\//, '') }),
    podInfraContainerImage: values['pod-infra-container-image'],
    network: values.network,
    restrictOomScoreAdj: values['restrict-oom-score-adj'],
    streamingAddress: values['streaming-address'],
  });
  const version = await docker.version();
  process.stderr.write(
    `dockershim: serving CRI on ${shim.endpoint}, streaming on ${shim.streamingUrl} (docker ${version.Version} at ${endpoint})\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      process.stderr.write(`dockershim: ${sig}, shutting down\n`);
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await shim.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`dockershim: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
