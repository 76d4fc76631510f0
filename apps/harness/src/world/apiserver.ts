// The run's fake apiserver, in its own container on the run's network: nodes reach it as
// https://apiserver:6443, the harness through a port published on 127.0.0.1. Bearer tokens only
// (one per node and one for the harness), TLS with the CA the server generates.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StartedTestNetwork } from '@kh/testkit';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inContainer, projectMounts } from '../node/project.js';
import { type StartedSupportContainer, SupportContainer } from '../node/support-container.js';

export const APISERVER_ALIAS = 'apiserver';
export const APISERVER_PORT = 6443;

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

export class ApiServerContainer {
  private network?: StartedTestNetwork;
  private users: ApiUser[] = [];
  private readyTimeoutMs = 60_000;

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
      .withNetwork(this.network, APISERVER_ALIAS)
      .withBindMounts(projectMounts())
      .withLoopbackPort(APISERVER_PORT)
      .withSharedFile('tokens.csv', tokenFile(this.users))
      .withCommand(
        inContainer('fakeApiserver', [
          '--host=0.0.0.0',
          `--port=${APISERVER_PORT}`,
          '--tls',
          `--tls-host=${APISERVER_ALIAS}`,
          '--token-file=/run/kh/tokens.csv',
          '--kubeconfig-out=/run/kh/kubeconfig',
          `--kubeconfig-server=https://${APISERVER_ALIAS}:${APISERVER_PORT}`,
        ]),
      )
      .start();
    const api = new StartedApiServer(container);
    try {
      await api.waitReady(this.readyTimeoutMs, this.users[0]?.token ?? '');
    } catch (err) {
      await api.stop();
      throw err;
    }
    return api;
  }
}

export class StartedApiServer {
  /** The kubeconfig the server wrote, naming https://apiserver:6443 and its CA. */
  kubeconfig = '';

  constructor(readonly container: StartedSupportContainer) {}

  get hostUrl(): string {
    return `https://127.0.0.1:${this.container.hostPort(APISERVER_PORT)}`;
  }

  readonly nodeUrl = `https://${APISERVER_ALIAS}:${APISERVER_PORT}`;

  /** A kubeconfig for `token`, for the host (loopback) or for a node (network alias). */
  kubeConfigFor(token: string, where: 'host' | 'node'): KubeConfig {
    return retargetKubeconfig(this.kubeconfig, where === 'host' ? this.hostUrl : this.nodeUrl, token);
  }

  async waitReady(timeoutMs: number, token: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        this.kubeconfig ||= await readFile(join(this.container.sharedDirOnHost, 'kubeconfig'), 'utf8');
        await this.kubeConfigFor(token, 'host').makeApiClient(CoreV1Api).listNamespace();
        return;
      } catch (err) {
        last = (err as Error).message;
      }
      const state = await this.container.docker.getContainer(this.container.id).inspect();
      if (!state.State.Running || Date.now() > deadline) {
        const logs = (await this.logs(30)).join('\n');
        throw new Error(`fake apiserver did not become ready (${last}):\n${logs}`);
      }
      await sleep(200);
    }
  }

  async logs(lines: number): Promise<string[]> {
    const buf = (await this.container.docker
      .getContainer(this.container.id)
      .logs({ stdout: true, stderr: true, tail: lines, follow: false })) as unknown as Buffer;
    return demuxLines(buf);
  }

  stop(): Promise<void> {
    return this.container.stop();
  }
}

/** Docker's non-TTY log stream: 8-byte frame headers before each chunk. */
export function demuxLines(buf: Buffer): string[] {
  let out = '';
  let pos = 0;
  while (pos + 8 <= buf.length) {
    const size = buf.readUInt32BE(pos + 4);
    out += buf.toString('utf8', pos + 8, pos + 8 + size);
    pos += 8 + size;
  }
  return out.split('\n').filter((l) => l.length > 0);
}
