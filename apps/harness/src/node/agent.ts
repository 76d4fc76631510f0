// Our node agent on one node: the harness writes its KubeletConfiguration and kubeconfig onto the
// node, starts it through the node's host (docker exec for containers) and can stop, restart or
// reconfigure it for scenarios that need the agent silent or differently tuned.

import { join } from 'node:path';
import { type PartialKubeletConfiguration, type TestOnlySettings, testOnlyFlags } from '@kh/node-agent';
import { kubeletConfiguration } from './agent-config.js';
import { AGENT_CRI_CALL_LOG } from './cri-call-log.js';
import type { NodeHost, NodeProcess } from './host.js';
import { inContainer } from './project.js';

export const AGENT_CONFIG_PATH = '/etc/kh/kubelet-config.json';
export const AGENT_KUBECONFIG_PATH = '/etc/kh/kubeconfig';
export const AGENT_ROOT_DIR = '/var/lib/kubelet';
export const AGENT_CLIENT_CA_PATH = '/etc/kh/pki/apiserver-ca.crt';
/** The agent's staticPodPath: scenarios write static pod manifests here (kubeadm's directory). */
export const AGENT_STATIC_POD_PATH = '/etc/kubernetes/manifests';

export interface AgentOptions {
  nodeName: string;
  criEndpoint: string;
  /** The kubeconfig file's text, naming the apiserver as the node reaches it. */
  kubeconfig: string;
  nodeIp?: string;
  cgroupRoot?: string;
  /** PEM of the CA that signed the apiserver's kubelet client certificate (the agent's clientCAFile). */
  clientCA?: string;
  /** argv prefix that runs a project command on this host (defaults to the in-container form). */
  command?: (args: string[]) => string[];
  /**
   * Directory under which the agent keeps its files, on a host it shares (the endpoint backend):
   * its paths are the ones above under `dir`. Absent: a node of its own, paths as they are.
   */
  dir?: string;
  /** KubeletConfiguration fields every start merges over the harness's (under reconfigure's). */
  config?: PartialKubeletConfiguration;
}

/** Where one of the agent's files is, under AgentOptions.dir when it has one. */
export const agentPath = (path: string, dir?: string): string => (dir ? join(dir, path) : path);

export class NodeAgent {
  private process: NodeProcess | undefined;
  private overrides: PartialKubeletConfiguration = {};
  private testOnly: TestOnlySettings = {};
  /** Lines of earlier agent processes (a restart must not lose what the report shows). */
  private previous: string[] = [];

  constructor(
    private readonly host: NodeHost,
    private readonly opts: AgentOptions,
  ) {}

  /** The argv the agent runs with (flags named as the kubelet's). */
  argv(): string[] {
    const at = (p: string) => agentPath(p, this.opts.dir);
    const args = [
      `--kubeconfig=${at(AGENT_KUBECONFIG_PATH)}`,
      `--config=${at(AGENT_CONFIG_PATH)}`,
      `--hostname-override=${this.opts.nodeName}`,
      `--root-dir=${at(AGENT_ROOT_DIR)}`,
      '--v=2',
      // Not a kubelet flag: our agent's log of its own CRI calls, merged into the report.
      `--cri-call-log=${at(AGENT_CRI_CALL_LOG)}`,
      ...(this.opts.nodeIp ? [`--node-ip=${this.opts.nodeIp}`] : []),
      ...testOnlyFlags(this.testOnly),
    ];
    return (this.opts.command ?? ((a) => inContainer('nodeAgent', a)))(args);
  }

  async start(): Promise<void> {
    if (this.process) throw new Error(`agent on ${this.opts.nodeName} is already running`);
    const at = (p: string) => agentPath(p, this.opts.dir);
    const config = kubeletConfiguration({
      criEndpoint: this.opts.criEndpoint,
      ...(this.opts.cgroupRoot ? { cgroupRoot: this.opts.cgroupRoot } : {}),
      ...(this.opts.clientCA ? { clientCAFile: at(AGENT_CLIENT_CA_PATH) } : {}),
      staticPodPath: at(AGENT_STATIC_POD_PATH),
      overrides: { ...this.opts.config, ...this.overrides },
    });
    // The agent reads disk stats of its root dir at start and expects it to exist. A node image
    // has no machine id (it is per machine, not per image): give each node one, as kind does. A
    // shared host has its own, which stays as it is.
    await this.host.exec([
      'sh',
      '-c',
      `mkdir -p ${at(AGENT_ROOT_DIR)} ${at(AGENT_STATIC_POD_PATH)} && { test -s /etc/machine-id || tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id; }`,
    ]);
    await this.host.writeFile(at(AGENT_KUBECONFIG_PATH), this.opts.kubeconfig);
    if (this.opts.clientCA) await this.host.writeFile(at(AGENT_CLIENT_CA_PATH), this.opts.clientCA);
    await this.host.writeFile(at(AGENT_CONFIG_PATH), `${JSON.stringify(config, null, 2)}\n`);
    this.process = await this.host.spawn(this.argv(), { name: 'node-agent' });
    const p = this.process;
    void p.exited.then((code) => {
      if (this.process !== p) return; // stopped on purpose: stop() keeps its lines
      this.process = undefined;
      this.previous.push(...p.tail(200), `-- node-agent exited unexpectedly (code ${code}) --`);
    });
  }

  async stop(): Promise<void> {
    await this.end('SIGTERM');
  }

  /** Kills the agent as a crash would (SIGKILL: nothing flushed, nothing cleaned up); start() runs it again. */
  async kill(): Promise<void> {
    await this.end('SIGKILL');
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    const p = this.process;
    if (!p) return;
    this.process = undefined;
    await p.stop(signal);
    this.previous.push(...p.tail(200));
    this.previous.splice(0, Math.max(0, this.previous.length - 400));
  }

  /**
   * Restarts the agent with `overrides` merged over the harness's configuration and with the
   * test-only settings `testOnly` (hidden agent flags); both last until the next reconfigure, and
   * `({})` resets them.
   */
  async reconfigure(overrides: PartialKubeletConfiguration, testOnly: TestOnlySettings = {}): Promise<void> {
    await this.stop();
    this.overrides = overrides;
    this.testOnly = testOnly;
    await this.start();
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** The last lines the agent wrote, across restarts. */
  tail(lines: number): string[] {
    return [...this.previous, ...(this.process?.tail(lines) ?? [])].slice(-lines);
  }
}
