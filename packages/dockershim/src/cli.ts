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
import { DEFAULT_CONFIG, NETWORK_PLUGINS, type NetworkPluginName } from './core/context.js';
import { DEFAULT_DOCKER_ENDPOINT, DockerodeClient } from './docker/api_client.js';
import { dockerMessage } from './docker/errors.js';
import { enterRuntimeCgroup } from './runtime_cgroups.js';
import { DEFAULT_STREAMING_ADDRESS, DockerShim } from './service.js';

const mib = (bytes: number) => `${bytes / 2 ** 20} MiB`;

const USAGE = `Usage: dockershim --listen <unix:///path/to.sock> [options]

A CRI v1 runtime (RuntimeService + ImageService) that drives Docker Engine.

Options:
  --listen <endpoint>                    CRI socket to serve (unix:///path, /path, tcp://127.0.0.1:port)
                                         (default unix:///var/run/dockershim.sock)
  --docker-endpoint <endpoint>           Docker Engine API (default ${DEFAULT_DOCKER_ENDPOINT})
  --pod-infra-container-image <image>    sandbox (pause) image (default ${DEFAULT_CONFIG.podInfraContainerImage})
  --runtime-cgroups <cgroup>             absolute cgroup to move the shim into, e.g. /kh/runtime
  --network-plugin <cni|docker>          how pods are networked (default ${DEFAULT_CONFIG.networkPlugin}, as cri-dockerd):
                                         cni: the pause container has network mode none and the CNI
                                         plugins set the pod up (IP, ports through portmap); docker:
                                         pods join a Docker network (--network), ports are Docker's
  --cni-bin-dir <dirs>                   comma list of directories holding CNI plugins
                                         (default ${DEFAULT_CONFIG.cniBinDirs.join(',')}; Debian installs them in /usr/lib/cni)
  --cni-conf-dir <dir>                   CNI configurations; the first valid one in name order is the
                                         pod network (default ${DEFAULT_CONFIG.cniConfDir})
  --cni-cache-dir <dir>                  CNI result cache, read by teardown and pod IPs after a restart
                                         (default ${DEFAULT_CONFIG.cniCacheDir})
  --cni-conf-template <file>             our extension, as containerd's CRI conf_template: a Go template
                                         ({{.PodCIDR}}, {{.PodCIDRRanges}}, {{.Routes}}) written into
                                         --cni-conf-dir when UpdateRuntimeConfig brings the node's pod CIDR
                                         and no valid configuration exists yet
  --network <name>                       docker mode: Docker network of pods without host network
                                         (default ${DEFAULT_CONFIG.network})
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

Networking: in cni mode (the default) NetworkReady is false ("cni config uninitialized") until
--cni-conf-dir holds a valid configuration; each pod gets the loopback network and the default
network on eth0, and its IPs are those of the CNI result. Host-network pods skip CNI.`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string', default: 'unix:///var/run/dockershim.sock' },
      'docker-endpoint': { type: 'string', default: DEFAULT_DOCKER_ENDPOINT },
      'pod-infra-container-image': { type: 'string', default: DEFAULT_CONFIG.podInfraContainerImage },
      'runtime-cgroups': { type: 'string' },
      network: { type: 'string', default: DEFAULT_CONFIG.network },
      'network-plugin': { type: 'string', default: DEFAULT_CONFIG.networkPlugin },
      'cni-bin-dir': { type: 'string', default: DEFAULT_CONFIG.cniBinDirs.join(',') },
      'cni-conf-dir': { type: 'string', default: DEFAULT_CONFIG.cniConfDir },
      'cni-cache-dir': { type: 'string', default: DEFAULT_CONFIG.cniCacheDir },
      'cni-conf-template': { type: 'string' },
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
  const networkPlugin = values['network-plugin'] as NetworkPluginName;
  if (!NETWORK_PLUGINS.includes(networkPlugin)) {
    process.stderr.write(
      `dockershim: --network-plugin ${JSON.stringify(networkPlugin)}: must be one of ${NETWORK_PLUGINS.join(', ')}\n`,
    );
    return 2;
  }
  const endpoint = values['docker-endpoint'];
  const docker = DockerodeClient.connect(endpoint);
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
    networkPlugin,
    cniBinDirs: values['cni-bin-dir'].split(',').filter((d) => d !== ''),
    cniConfDir: values['cni-conf-dir'],
    cniCacheDir: values['cni-cache-dir'],
    cniConfTemplate: values['cni-conf-template'],
    restrictOomScoreAdj: values['restrict-oom-score-adj'],
    streamingAddress: values['streaming-address'],
  });
  const version = await docker.version();
  process.stderr.write(
    `dockershim: serving CRI on ${shim.endpoint}, streaming on ${shim.streamingUrl} (docker ${version.Version} at ${endpoint}, network plugin ${networkPlugin})\n`,
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
