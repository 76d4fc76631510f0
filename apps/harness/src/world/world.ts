// One run, one private world: a labelled network, the fake apiserver and a real registry holding
// the workload images. Nodes join it (run/node.ts); scenarios see it through their context.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PartialKubeletConfiguration, TestOnlySettings } from '@kh/node-agent';
import {
  ensureImages,
  type ImageName,
  type ImageRefs,
  PRIVATE_REGISTRY_HOST,
  RegistryContainer,
  type StartedRegistryContainer,
  type StartedTestNetwork,
  TestNetwork,
  WORKLOAD_IMAGES,
} from '@kh/testkit';
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { nodeCapabilities } from '../backends/started-node.js';
import type { ScenarioContext } from '../framework/scenario.js';
import { containerCpuClock, roundSeconds } from '../node/cpu.js';
import type { ContainerCpu } from '../results/model.js';
import { type KubectlOptions, runKubectl, startKubectl } from '../support/kubectl.js';
import type { Progress } from '../support/progress.js';
import { ApiServerContainer, type StartedApiServer } from './apiserver.js';
import { HostCriView } from './cri-view.js';
import { ApiTimeline } from './timeline.js';
import type { OpenCell, ReadyNode, TimelineSink, World, WorldContext } from './types.js';

/** Workload images pods use, as the nodes pull them from the run's registry. */
export type WorkloadImages = ScenarioContext['images'];

/** A runtime's first node is `kh-<run>-<runtime>`; its further nodes (lanes) `…-2`, `…-3`. */
export const nodeNameFor = (runId: string, backend: string, index = 0): string =>
  `kh-${runId}-${backend}${index > 0 ? `-${index + 1}` : ''}`;

export interface WorldOptions {
  runId: string;
  /** Names of the nodes that will join; each gets its own API token. */
  nodes: readonly string[];
  /** Images the runtimes' nodes are made from (their backends' `images`), besides `node`. */
  images?: readonly ImageName[];
  progress: Progress;
}

export class HarnessWorld implements World {
  /** Open cells' sinks by namespace and by node name. */
  private readonly routes = new Map<string, Set<TimelineSink>>();
  private readonly criViews = new Set<HostCriView>();
  private timeline?: ApiTimeline;
  private tmp?: string;
  private network?: StartedTestNetwork;
  private apiserver?: StartedApiServer;
  private registry?: StartedRegistryContainer;
  private privateRegistry?: StartedRegistryContainer;
  private readonly tokens = new Map<string, string>();
  private unprivilegedToken = '';
  refs!: ImageRefs;
  images!: WorkloadImages;
  kubeConfig!: KubeConfig;
  core!: CoreV1Api;
  private kubeconfigPath = '';

  private constructor(readonly runId: string) {}

  /** Builds the world; whatever was created before a failure is removed again. */
  static async start(opts: WorldOptions): Promise<HarnessWorld> {
    const world = new HarnessWorld(opts.runId);
    try {
      await world.build(opts);
    } catch (err) {
      await world.stop().catch(() => {});
      throw err;
    }
    return world;
  }

  private async build({ runId, nodes, images = [], progress }: WorldOptions): Promise<void> {
    progress.step('images (content-hashed; built only when missing)');
    this.refs = await ensureImages(['node', ...WORKLOAD_IMAGES, ...images], {
      progress: (l) => progress.info(l),
    });
    this.tmp = await mkdtemp(join(tmpdir(), `kh-harness-${runId}-`));
    progress.step(`network kh-${runId}`);
    this.network = await new TestNetwork().withName(`kh-${runId}`).start();

    const token = () => randomBytes(16).toString('hex');
    const admin = token();
    this.unprivilegedToken = token();
    const users = [
      { token: admin, name: 'kubelet-harness', groups: ['system:masters'] },
      { token: this.unprivilegedToken, name: 'kh-unprivileged', groups: [] },
    ];
    for (const nodeName of nodes) {
      this.tokens.set(nodeName, token());
      users.push({
        token: this.tokens.get(nodeName)!,
        name: `system:node:${nodeName}`,
        groups: ['system:nodes'],
      });
    }
    progress.step('fake apiserver (token auth, TLS) and registries');
    // A second registry with basic auth rather than auth on the one registry: the workload images
    // stay pullable without secrets (as most images are), and pull secrets are tested against a
    // registry that refuses anonymous pulls. Each started container is kept before awaiting the
    // others, so that stop() removes it if another one fails.
    const started = await Promise.allSettled([
      new ApiServerContainer(this.refs.node, `kh-${runId}-apiserver`)
        .withNetwork(this.network)
        .withUsers(users)
        .start()
        .then((a) => {
          this.apiserver = a;
        }),
      new RegistryContainer(this.refs.node)
        .withNetwork(this.network)
        .start()
        .then((r) => {
          this.registry = r;
        }),
      new RegistryContainer(this.refs.node)
        .withNetwork(this.network)
        .withNetworkAlias(PRIVATE_REGISTRY_HOST.split(':')[0]!)
        .withBasicAuth('kh-pull')
        .start()
        .then((r) => {
          this.privateRegistry = r;
        }),
    ]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const [apiserver, registry, privateRegistry] = [this.apiserver!, this.registry!, this.privateRegistry!];
    progress.ok(`apiserver at ${apiserver.hostUrl} (nodes: ${apiserver.nodeUrl})`);

    progress.step(`pushing ${WORKLOAD_IMAGES.length} workload images to ${registry.networkAddress}`);
    const pushed = await Promise.all(
      WORKLOAD_IMAGES.map(async (name) => {
        const tag = this.refs[name].split(':')[1] ?? 'latest';
        return [name, await registry.push(this.refs[name], `kh/${name}:${tag}`)] as const;
      }),
    );
    const busyboxTag = this.refs.busybox.split(':')[1] ?? 'latest';
    const privateRef = await privateRegistry.push(this.refs.busybox, `kh/private:${busyboxTag}`);
    this.images = { ...Object.fromEntries(pushed), private: privateRef } as WorkloadImages;

    this.kubeConfig = apiserver.kubeConfigFor(admin, 'host');
    this.kubeconfigPath = join(this.tmp, 'kubeconfig');
    await writeFile(this.kubeconfigPath, this.kubeConfig.exportConfig(), { mode: 0o600 });
    this.core = this.kubeConfig.makeApiClient(CoreV1Api);
    this.timeline = new ApiTimeline(this.kubeConfig, ({ namespace, node }) => {
      const sinks =
        (namespace ? this.routes.get(namespace) : undefined) ?? (node ? this.routes.get(node) : undefined);
      return sinks
        ? (e) => {
            for (const sink of sinks) sink(e);
          }
        : undefined;
    });
    await this.timeline.start();
  }

  /** The admin kubeconfig file on the host, as scenarios' kubectl uses it. */
  get kubeconfigFile(): string {
    return this.kubeconfigPath;
  }

  /** The CA a node agent trusts for the apiserver's kubelet client certificate (its clientCAFile). */
  get apiserverCA(): string {
    if (!this.apiserver) throw new Error('the world has no apiserver');
    return this.apiserver.caPem;
  }

  get networkHandle(): StartedTestNetwork {
    if (!this.network) throw new Error('the world has no network');
    return this.network;
  }

  /**
   * The kubeconfig text an agent on `nodeName` uses, with its own token: https://apiserver:6443 on
   * the run's network, or the loopback port for an agent on this machine (the endpoint backend).
   */
  nodeKubeconfig(nodeName: string, from: 'node' | 'host' = 'node'): string {
    const token = this.tokens.get(nodeName);
    if (!token || !this.apiserver) throw new Error(`no API token for node ${nodeName}`);
    return `${this.apiserver.kubeConfigFor(token, from).exportConfig()}\n`;
  }

  async createNamespace(name: string): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name, labels: { 'kh.run': this.runId } } } });
  }

  async deleteNamespace(name: string): Promise<void> {
    await this.core.deleteNamespace({ name });
  }

  async openCell(node: ReadyNode, namespace: string, sink: TimelineSink): Promise<OpenCell> {
    const nodeName = node.started.nodeName;
    // A view per cell, so that its calls land in its own timeline when cells share the node.
    const cri = await HostCriView.connect(node.started.hostCriEndpoint, () => sink);
    this.criViews.add(cri);
    const keys = new Set<string>();
    const claim = (key: string) => {
      keys.add(key);
      const sinks = this.routes.get(key) ?? new Set();
      this.routes.set(key, sinks.add(sink));
    };
    claim(namespace);
    claim(nodeName);
    return {
      context: this.contextOf(node, cri),
      claim,
      close: () => {
        cri.close();
        this.criViews.delete(cri);
        for (const key of keys) {
          const sinks = this.routes.get(key);
          sinks?.delete(sink);
          if (sinks?.size === 0) this.routes.delete(key);
        }
      },
    };
  }

  private contextOf(node: ReadyNode, cri: HostCriView): WorldContext {
    const nodeName = node.started.nodeName;
    const registry = this.registry!;
    return {
      nodeName,
      backend: node.started,
      capabilities: nodeCapabilities(node.backend, node.started),
      kubeConfig: this.kubeConfig,
      core: this.core,
      coordination: this.kubeConfig.makeApiClient(CoordinationV1Api),
      cri,
      kubectl: (args: string[], opts: KubectlOptions = {}) => runKubectl(this.kubeconfigPath, args, opts),
      kubectlStart: (args: string[], opts: KubectlOptions = {}) =>
        startKubectl(this.kubeconfigPath, args, opts),
      unprivilegedToken: this.unprivilegedToken,
      registry: {
        host: registry.networkAddress,
        private: { host: this.privateRegistry!.networkAddress, ...this.privateRegistry!.credentials! },
      },
      agent: { stop: () => node.stopAgent(), start: () => node.startAgent(), kill: () => node.killAgent() },
      apiserver: { restart: () => this.restartApiserver() },
      images: this.images,
      reconfigureAgent: (overrides: PartialKubeletConfiguration, testOnly?: TestOnlySettings) =>
        node.reconfigureAgent(overrides, testOnly),
    };
  }

  /** Kills the apiserver and starts it again on its data dir; the same URL and CA serve again. */
  async restartApiserver(): Promise<void> {
    if (!this.apiserver) throw new Error('the world has no apiserver');
    await this.apiserver.restart();
  }

  /**
   * Lets go of the world without removing it: ends the API watch and the CRI connections this
   * process holds, so that `kubelet-harness up` can exit and leave the world running.
   */
  detach(): void {
    this.timeline?.stop();
    for (const c of this.criViews.values()) c.close();
    this.criViews.clear();
  }

  async cpuUse(): Promise<ContainerCpu[]> {
    const docker = new Docker();
    const containers = [
      ['apiserver', this.apiserver?.container.getId()],
      ['registry', this.registry?.id],
      ['private-registry', this.privateRegistry?.id],
    ] as const;
    return Promise.all(
      containers.flatMap(([name, id]) =>
        id
          ? [
              containerCpuClock(docker, id).then(async (clock) => ({
                name,
                seconds: roundSeconds(await clock()),
              })),
            ]
          : [],
      ),
    );
  }

  /** Removes everything the world created, in dependency order; collects rather than stops at errors. */
  async stop(): Promise<void> {
    this.detach();
    const results = await Promise.allSettled([
      this.apiserver?.stop(),
      this.registry?.stop(),
      this.privateRegistry?.stop(),
    ]);
    results.push(...(await Promise.allSettled([this.network?.stop()])));
    if (this.tmp) await rm(this.tmp, { recursive: true, force: true });
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length > 0) throw new Error(failed.map((f) => (f.reason as Error).message).join('; '));
  }
}
