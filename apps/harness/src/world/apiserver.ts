// The run's fake apiserver, in its own container on the run's network: nodes reach it as
// https://apiserver:6443, the harness through a port published on 127.0.0.1. Bearer tokens only
// (one per node, one for the harness, one without rights), Node,RBAC, TLS with the CA the server generates.

import { readFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { READY_LINE } from '@kh/fake-apiserver/command';
import type { StartedTestNetwork } from '@kh/testkit';
import { KubeConfig } from '@kubernetes/client-node';
import { Wait } from 'testcontainers';
import { inContainer, projectMounts } from '../node/project.js';
import { type StartedSupportContainer, SupportContainer } from '../node/support-container.js';

export const APISERVER_ALIAS = 'apiserver';
export const APISERVER_PORT = 6443;
/**
 * The pods' range, as a kubeadm cluster's kube-controller-manager has it (--allocate-node-cidrs
 * --cluster-cidr --node-cidr-mask-size): every node gets its own /24 of it as spec.podCIDR, and
 * its runtime networks pods from that (the agent passes it on with CRI UpdateRuntimeConfig).
 */
export const CLUSTER_CIDR = '10.244.0.0/16';
export const NODE_CIDR_MASK_SIZE = 24;

export interface ApiUser {
  token: string;
  name: string;
  groups: string[];
}

/** kube-apiserver's static token file: token,user,uid,"group1,group2". */
export function tokenFile(users: ApiUser[]): string {
  return users.map((u) => `${u.token},${u.name},${u.name},"${u.groups.join(',')}"`).join('\n') + '\n';
}

/** The same kubeconfig pointed at another server and authenticated with another token. */
export function retargetKubeconfig(kubeconfig: string, server: string, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user) throw new Error('apiserver kubeconfig has no current cluster or user');
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: [{ name: user.name, token }],
    contexts: [{ name: 'kh', cluster: cluster.name, user: user.name }],
    currentContext: 'kh',
  });
  return out;
}

/** The server prints this once it listens, after writing its kubeconfig. */
const READY_TIMEOUT_MS = 60_000;
/** The server's storage, in the container's shared directory (on the host, kept across restarts). */
const DATA_DIR = '/run/kh/data';

export class ApiServerContainer {
  private network?: StartedTestNetwork;
  private users: ApiUser[] = [];

  constructor(
    private readonly image: string,
    private readonly name: string,
  ) {}

  withNetwork(network: StartedTestNetwork): this {
    this.network = network;
    return this;
  }

  withUsers(users: ApiUser[]): this {
    this.users.push(...users);
    return this;
  }

  async start(): Promise<StartedApiServer> {
    if (!this.network) throw new Error('ApiServerContainer needs a network (withNetwork)');
    const container = await new SupportContainer(this.image, this.name, 'apiserver')
      .withRunNetwork(this.network, APISERVER_ALIAS)
      .withBindMounts(projectMounts())
      // A fixed host port: the harness's clients must find the server again after restart().
      .withLoopbackPort(APISERVER_PORT, await freeLoopbackPort())
      .withSharedFile('tokens.csv', tokenFile(this.users))
      .withCommand(
        inContainer('fakeApiserver', [
          '--host=0.0.0.0',
          `--port=${APISERVER_PORT}`,
          '--tls',
          `--tls-host=${APISERVER_ALIAS}`,
          '--token-file=/run/kh/tokens.csv',
          // Durable, as etcd is: restart() loses no acknowledged object, and the CA stays the same.
          `--data-dir=${DATA_DIR}`,
          // As a kubeadm cluster: the harness is system:masters, each node may touch only its
          // own Node, Lease and pods (Node authorizer and NodeRestriction), and a user without
          // bindings (kh-unprivileged) is refused with 403.
          '--authorization-mode=Node,RBAC',
          // Alpha API fields the node e2e cases use (container-restart-policy); each case's node
          // agent turns its own side of the gate on.
          '--feature-gates=ContainerRestartRules=true',
          '--allocate-node-cidrs',
          `--cluster-cidr=${CLUSTER_CIDR}`,
          `--node-cidr-mask-size=${NODE_CIDR_MASK_SIZE}`,
          '--kubeconfig-out=/run/kh/kubeconfig',
          // The CA of its serving and kubelet client certificates: the nodes' clientCAFile.
          '--ca-cert-out=/run/kh/ca.crt',
          `--kubeconfig-server=https://${APISERVER_ALIAS}:${APISERVER_PORT}`,
        ]),
      )
      .withWaitStrategy(Wait.forLogMessage(READY_LINE))
      .withStartupTimeout(READY_TIMEOUT_MS)
      .start();
    try {
      const [kubeconfig, ca] = await Promise.all(
        ['kubeconfig', 'ca.crt'].map((f) => readFile(join(container.sharedDirOnHost, f), 'utf8')),
      );
      return new StartedApiServer(container, kubeconfig!, ca!);
    } catch (err) {
      await container.stop();
      throw err;
    }
  }
}

export class StartedApiServer {
  constructor(
    readonly container: StartedSupportContainer,
    /** The kubeconfig the server wrote, naming https://apiserver:6443 and its CA. */
    readonly kubeconfig: string,
    /** PEM of the CA that signed its serving and kubelet client certificates. */
    readonly caPem: string,
  ) {}

  get hostUrl(): string {
    return `https://127.0.0.1:${this.container.getMappedPort(APISERVER_PORT)}`;
  }

  readonly nodeUrl = `https://${APISERVER_ALIAS}:${APISERVER_PORT}`;

  /** A kubeconfig for `token`, for the host (loopback) or for a node (network alias). */
  kubeConfigFor(token: string, where: 'host' | 'node'): KubeConfig {
    return retargetKubeconfig(this.kubeconfig, where === 'host' ? this.hostUrl : this.nodeUrl, token);
  }

  /**
   * Kills the server (SIGKILL, no graceful shutdown) and starts it again on the same data dir,
   * address and certificates; resolves once it listens again.
   */
  async restart(): Promise<void> {
    await this.container.restart({ timeout: 0 });
  }

  async stop(): Promise<void> {
    await this.container.stop();
  }
}

/** A port on 127.0.0.1 that nothing listens on right now. */
async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
