// The dockershim's CNI network plugin (cri-dockerd's network/cni, on libcni's semantics): pods
// join the default network of --cni-conf-dir (plus a loopback network for `lo`), set up by the
// plugins in --cni-bin-dir, with results cached in --cni-cache-dir. Independent of Docker and of
// gRPC: the shim gives it a sandbox id and a network namespace path.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { type CachedAttachment, ResultCache, resultIps } from './cache.js';
import {
  confDirSignature,
  type JsonObject,
  type LoadResult,
  loadDefaultNetwork,
  type NetworkConfigList,
  parseConfList,
} from './config.js';
import { CniPluginError, CniTimeoutError, execPlugin, findPlugin, type PluginInvocation } from './exec.js';
import { ConfTemplate, templateData } from './template.js';

export { CniPluginError, CniTimeoutError } from './exec.js';

/** cri-dockerd's defaults (its --cni-bin-dir, --cni-conf-dir, --cni-cache-dir). */
export const DEFAULT_CNI_BIN_DIR = '/opt/cni/bin';
export const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';
export const DEFAULT_CNI_CACHE_DIR = '/var/lib/cni/cache';
/** How long one set-up or tear-down may take, every plugin included (cri-dockerd's CNITimeoutSec). */
export const DEFAULT_CNI_TIMEOUT_MS = 220_000;
/** The interface a pod's network plugins create (the kubelet's and cri-dockerd's). */
export const POD_INTERFACE = 'eth0';
/** The file UpdateRuntimeConfig writes from --cni-conf-template (containerd writes 10-containerd-net.conflist). */
export const TEMPLATED_CONF_FILE = '10-dockershim-net.conflist';

/** `lo` is brought up by a network of its own, never chained: the loopback plugin configures CNI_IFNAME. */
const LOOPBACK_NETWORK = parseConfList(
  JSON.stringify({ cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] }),
);
const LOOPBACK_INTERFACE = 'lo';
/** While no network is usable, the conf dir is read again at most this often (cri-dockerd: 5 s). */
const RETRY_MS = 5_000;

/** A CNI port mapping (the `portMappings` capability, CONVENTIONS.md). */
export interface CniPortMapping {
  hostPort: number;
  containerPort: number;
  protocol: string;
  hostIP: string;
}

export interface PodNetwork {
  sandboxId: string;
  /** /proc/<pid>/ns/net of the pause process. */
  netns: string;
  podName: string;
  podNamespace: string;
  podUid: string;
  /** hostPort > 0 only: those are what portmap forwards. */
  portMappings: CniPortMapping[];
  /** The `dns` capability, when the pod has a DNS config. */
  dns?: { servers: string[]; searches: string[]; options: string[] };
}

/** The plugin has no usable network configuration (NetworkReady=false). */
export class CniNotReadyError extends Error {}
/** UpdateRuntimeConfig brought something that is not a list of CIDRs. */
export class InvalidPodCidrError extends Error {}

export interface CniOptions {
  confDir: string;
  binDirs: string[];
  cacheDir: string;
  timeoutMs?: number;
  /** Path of a containerd-style conf template, rendered into confDir when pod CIDRs arrive. */
  confTemplate?: string;
  log?: (line: string) => void;
}

/** CNI's version order: "0.4.0" < "1.0.0"; "" is 0.1.0. */
function atLeast(version: string, min: string): boolean {
  const parse = (v: string) => (v || '0.1.0').split('.').map((n) => Number.parseInt(n, 10) || 0);
  const [a, b] = [parse(version), parse(min)];
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

function isCidr(s: string): boolean {
  const [addr = '', bits, ...rest] = s.split('/');
  const family = isIP(addr);
  if (family === 0 || bits === undefined || rest.length > 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/** IPv4 addresses first, each family in the plugin's order. */
export function sortPodIps(ips: readonly string[]): string[] {
  return [...ips.filter((ip) => isIP(ip) === 4), ...ips.filter((ip) => isIP(ip) !== 4)];
}

export class CniNetworkPlugin {
  private readonly cache: ResultCache;
  private readonly timeoutMs: number;
  private readonly log: (line: string) => void;
  private loaded: { signature: string; at: number; result: LoadResult } | undefined;
  private loading: { signature: string; result: Promise<LoadResult> } | undefined;
  /** The first pod CIDRs UpdateRuntimeConfig brought (later ones are ignored, as by cri-dockerd). */
  private podCidrs: string[] | undefined;
  /** Pod IPs by sandbox, from ADD results or read back from the cache. */
  private readonly ips = new Map<string, string[]>();
  /** One set-up or tear-down at a time per sandbox. */
  private readonly busy = new Map<string, Promise<unknown>>();

  private constructor(
    readonly options: CniOptions,
    private readonly template: ConfTemplate | undefined,
  ) {
    this.cache = new ResultCache(options.cacheDir);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_CNI_TIMEOUT_MS;
    this.log = options.log ?? (() => undefined);
  }

  /** Reads and parses the conf template, if any: a bad one fails here, at start-up. */
  static async create(options: CniOptions): Promise<CniNetworkPlugin> {
    let template: ConfTemplate | undefined;
    if (options.confTemplate) {
      const text = await readFile(options.confTemplate, 'utf8').catch((err: Error) => {
        throw new Error(`cni conf template ${options.confTemplate}: ${err.message}`);
      });
      try {
        template = ConfTemplate.parse(text);
      } catch (err) {
        throw new Error(`cni conf template ${options.confTemplate}: ${(err as Error).message}`);
      }
    }
    return new CniNetworkPlugin(options, template);
  }

  /** Undefined when pods can be set up; otherwise why not (containerd's and cri-dockerd's words first). */
  async status(): Promise<string | undefined> {
    const loaded = await this.defaultNetwork();
    if ('error' in loaded) return `cni config uninitialized: ${loaded.error}`;
    const needsRanges = loaded.network.plugins.some((p) => p.capabilities.ipRanges);
    if (needsRanges && !this.podCidrs) return 'cni config needs ipRanges but no PodCIDR set';
    return undefined;
  }

  /**
   * ADD: `lo`, then the default network on eth0. Returns the pod's IPs, IPv4 first. A failure
   * leaves nothing cached; the caller tears down what a plugin may have half done.
   */
  async setUpPod(pod: PodNetwork): Promise<string[]> {
    return this.exclusive(pod.sandboxId, async () => {
      const problem = await this.status();
      if (problem) throw new CniNotReadyError(problem);
      const loaded = (await this.defaultNetwork()) as { network: NetworkConfigList };
      const deadline = Date.now() + this.timeoutMs;
      const attach = this.attachment(pod);
      await this.addNetworkList(LOOPBACK_NETWORK, { ...attach, ifName: LOOPBACK_INTERFACE }, deadline);
      const result = await this.addNetworkList(
        loaded.network,
        { ...attach, ifName: POD_INTERFACE },
        deadline,
      );
      const ips = sortPodIps(resultIps(result));
      this.ips.set(pod.sandboxId, ips);
      return ips;
    });
  }

  /**
   * DEL of every network the cache says this sandbox joined, with the configuration, CNI_ARGS and
   * capability args of its ADD (so a restarted shim, or a changed conf dir, tears down what was set
   * up), in reverse plugin order. `netns` is empty when the pause process is gone. Nothing cached:
   * nothing to do (already torn down, or never set up). Returns whether anything was torn down.
   */
  async tearDownPod(sandboxId: string, netns: string): Promise<boolean> {
    return this.exclusive(sandboxId, async () => {
      const attachments = await this.cache.attachments(sandboxId);
      this.ips.delete(sandboxId);
      if (attachments.length === 0) return false;
      const deadline = Date.now() + this.timeoutMs;
      // `lo` first, as cri-dockerd does; its failure is not fatal (the namespace goes with the pod).
      const lo = attachments.filter((a) => a.ifName === LOOPBACK_INTERFACE);
      for (const a of lo) {
        await this.delAttachment(a, netns, deadline).catch((err: Error) =>
          this.log(`dockershim: CNI teardown of the loopback network of ${sandboxId}: ${err.message}`),
        );
      }
      for (const a of attachments.filter((x) => x.ifName !== LOOPBACK_INTERFACE))
        await this.delAttachment(a, netns, deadline);
      return true;
    });
  }

  /** Whether the cache holds a network this sandbox joined (its teardown is still to do). */
  async isAttached(sandboxId: string): Promise<boolean> {
    return (await this.cache.attachments(sandboxId)).length > 0;
  }

  /**
   * DEL of the current default network for a sandbox whose ADD failed part-way (nothing is
   * cached then): plugins release what they allocated by container id.
   */
  async tearDownFailedSetUp(pod: PodNetwork): Promise<void> {
    return this.exclusive(pod.sandboxId, async () => {
      const loaded = await this.defaultNetwork();
      if ('error' in loaded) return;
      const deadline = Date.now() + this.timeoutMs;
      const a = this.attachment(pod);
      const inv = {
        containerId: a.containerId,
        netns: a.netns,
        args: a.cniArgs,
        binDirs: this.options.binDirs,
      };
      await this.delNetworkList(
        loaded.network,
        { ...inv, ifName: POD_INTERFACE },
        a.capabilityArgs,
        undefined,
        deadline,
      );
      for (const ifName of [POD_INTERFACE, LOOPBACK_INTERFACE]) {
        const networkName = ifName === POD_INTERFACE ? loaded.network.name : LOOPBACK_NETWORK.name;
        await this.cache.delete({ networkName, containerId: pod.sandboxId, ifName });
      }
    });
  }

  /** What an ADD of this pod passes besides the network: CNI_ARGS as the kubelet sends them, and capability args. */
  private attachment(
    pod: PodNetwork,
  ): Pick<CachedAttachment, 'containerId' | 'netns' | 'cniArgs' | 'capabilityArgs'> {
    const capabilityArgs: JsonObject = { portMappings: pod.portMappings };
    if (pod.dns) capabilityArgs.dns = pod.dns;
    if (this.podCidrs) capabilityArgs.ipRanges = this.podCidrs.map((subnet) => [{ subnet }]);
    return {
      containerId: pod.sandboxId,
      netns: pod.netns,
      cniArgs: [
        ['IgnoreUnknown', '1'],
        ['K8S_POD_NAMESPACE', pod.podNamespace],
        ['K8S_POD_NAME', pod.podName],
        ['K8S_POD_INFRA_CONTAINER_ID', pod.sandboxId],
        ['K8S_POD_UID', pod.podUid],
      ],
      capabilityArgs,
    };
  }

  /** The pod's IPs from its ADD result (memory, else the cache); undefined when none is cached. */
  async podIps(sandboxId: string): Promise<string[] | undefined> {
    const known = this.ips.get(sandboxId);
    if (known) return known;
    const pod = (await this.cache.attachments(sandboxId)).find((a) => a.ifName === POD_INTERFACE);
    if (!pod) return undefined;
    const ips = sortPodIps(resultIps(pod.result));
    this.ips.set(sandboxId, ips);
    return ips;
  }

  /**
   * UpdateRuntimeConfig's pod CIDRs ("a" or "a,b"). With a conf template and no valid network yet,
   * renders the template into the conf dir, as containerd does; a valid network is never
   * overwritten, and only the first CIDRs count (cri-dockerd ignores later ones too).
   */
  async updatePodCidr(podCidr: string): Promise<void> {
    const cidrs = podCidr
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '');
    if (cidrs.length === 0) return;
    const bad = cidrs.find((c) => !isCidr(c));
    if (bad !== undefined) throw new InvalidPodCidrError(`invalid pod CIDR ${JSON.stringify(bad)}`);
    if (this.podCidrs === undefined) this.podCidrs = cidrs;
    else if (this.podCidrs.join(',') !== cidrs.join(','))
      this.log(`dockershim: ignoring pod CIDR ${podCidr}: already using ${this.podCidrs.join(',')}`);
    if (!this.template) return;
    if (!('error' in (await this.defaultNetwork()))) return;
    const text = this.template.execute(templateData(this.podCidrs));
    const { confDir } = this.options;
    await mkdir(confDir, { recursive: true });
    const file = join(confDir, TEMPLATED_CONF_FILE);
    const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, text, { mode: 0o644 });
    await rename(tmp, file);
    this.log(
      `dockershim: wrote ${file} from ${this.options.confTemplate} for pod CIDR ${this.podCidrs.join(',')}`,
    );
    const loaded = await this.defaultNetwork();
    if ('error' in loaded) this.log(`dockershim: the templated CNI config is not usable: ${loaded.error}`);
  }

  /** What the verbose Status shows. */
  async describe(): Promise<JsonObject> {
    const loaded = await this.defaultNetwork();
    return {
      confDir: this.options.confDir,
      binDirs: this.options.binDirs,
      cacheDir: this.options.cacheDir,
      ...(this.options.confTemplate ? { confTemplate: this.options.confTemplate } : {}),
      podCidrs: this.podCidrs ?? [],
      ...('error' in loaded ? { error: loaded.error } : { network: loaded.network.name, file: loaded.file }),
    };
  }

  /**
   * The default network, read again when the conf dir changed since the last look, and, while
   * none is usable, at most every RETRY_MS (plugins may be installed after the config).
   */
  private async defaultNetwork(): Promise<LoadResult> {
    const { confDir, binDirs } = this.options;
    const signature = await confDirSignature(confDir);
    const fresh = (l: { signature: string; at: number; result: LoadResult }) =>
      l.signature === signature && (!('error' in l.result) || Date.now() - l.at < RETRY_MS);
    if (this.loaded && fresh(this.loaded)) return this.loaded.result;
    if (this.loading?.signature === signature) return this.loading.result;
    const at = Date.now();
    const result = loadDefaultNetwork(confDir, binDirs).catch(
      (err: Error): LoadResult => ({ error: `reading ${confDir}: ${err.message}` }),
    );
    this.loading = { signature, result };
    try {
      const loaded = await result;
      this.loaded = { signature, at, result: loaded };
      return loaded;
    } finally {
      if (this.loading?.result === result) this.loading = undefined;
    }
  }

  private async exclusive<T>(sandboxId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(sandboxId) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(fn);
    this.busy.set(sandboxId, run);
    try {
      return await run;
    } finally {
      if (this.busy.get(sandboxId) === run) this.busy.delete(sandboxId);
    }
  }

  /** libcni's AddNetworkList: each plugin gets the previous one's result; the last result is cached. */
  private async addNetworkList(
    list: NetworkConfigList,
    a: Omit<CachedAttachment, 'networkName' | 'config' | 'result'>,
    deadline: number,
  ): Promise<JsonObject> {
    const inv: PluginInvocation = {
      command: 'ADD',
      containerId: a.containerId,
      netns: a.netns,
      ifName: a.ifName,
      args: a.cniArgs,
      binDirs: this.options.binDirs,
    };
    let result: JsonObject | undefined;
    for (const plugin of list.plugins) {
      const out = await this.runPlugin(
        list,
        plugin.raw,
        plugin.capabilities,
        inv,
        a.capabilityArgs,
        result,
        deadline,
        'add',
      );
      try {
        const parsed: unknown = JSON.parse(out);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new Error('not an object');
        result = parsed as JsonObject;
      } catch (err) {
        throw new CniPluginError(
          0,
          `plugin type=${JSON.stringify(plugin.type)} returned an invalid result: ${(err as Error).message}`,
        );
      }
    }
    const final = result ?? {};
    await this.cache.put({ ...a, networkName: list.name, config: list.bytes, result: final });
    return final;
  }

  private async delAttachment(a: CachedAttachment, netns: string, deadline: number): Promise<void> {
    const list = parseConfList(a.config);
    const inv = {
      containerId: a.containerId,
      netns,
      ifName: a.ifName,
      args: a.cniArgs,
      binDirs: this.options.binDirs,
    };
    // Cached results are handed to DEL from CNI 0.4.0 on.
    const prev = atLeast(list.cniVersion, '0.4.0') ? a.result : undefined;
    await this.delNetworkList(list, inv, a.capabilityArgs, prev, deadline);
    await this.cache.delete(a);
  }

  /** libcni's DelNetworkList: the plugins in reverse order, each with the cached result. */
  private async delNetworkList(
    list: NetworkConfigList,
    inv: Omit<PluginInvocation, 'command'>,
    capabilityArgs: JsonObject,
    prevResult: JsonObject | undefined,
    deadline: number,
  ): Promise<void> {
    for (const plugin of [...list.plugins].reverse()) {
      await this.runPlugin(
        list,
        plugin.raw,
        plugin.capabilities,
        { ...inv, command: 'DEL' },
        capabilityArgs,
        prevResult,
        deadline,
        'delete',
      );
    }
  }

  /** libcni's buildOneConfig + invoke: name, cniVersion, prevResult and runtimeConfig injected. */
  private async runPlugin(
    list: NetworkConfigList,
    raw: JsonObject,
    capabilities: Record<string, boolean>,
    inv: PluginInvocation,
    capabilityArgs: JsonObject,
    prevResult: JsonObject | undefined,
    deadline: number,
    verb: 'add' | 'delete',
  ): Promise<string> {
    const conf: JsonObject = { ...raw, name: list.name, cniVersion: list.cniVersion };
    if (prevResult) conf.prevResult = prevResult;
    const runtimeConfig: JsonObject = {};
    for (const [cap, on] of Object.entries(capabilities))
      if (on && capabilityArgs[cap] !== undefined) runtimeConfig[cap] = capabilityArgs[cap];
    if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
    const type = String(raw.type);
    try {
      const path = await findPlugin(type, inv.binDirs);
      return await execPlugin(path, JSON.stringify(conf), inv, deadline);
    } catch (err) {
      const what = `plugin type=${JSON.stringify(type)} failed (${verb})`;
      if (err instanceof CniTimeoutError)
        throw new CniTimeoutError(`${what}: no answer within ${this.timeoutMs} ms; killed`);
      if (err instanceof CniPluginError) throw new CniPluginError(err.code, `${what}: ${err.message}`);
      throw new CniPluginError(0, `${what}: ${(err as Error).message}`);
    }
  }
}
