// What the fault scenarios share: what the runtime really holds for the cell's pods (CRI, not the
// agent's view), how the node is cut off from the apiserver, and what a node command must return.
import type { CriItem, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';

const POD_UID = 'io.kubernetes.pod.uid';
const POD_NAME = 'io.kubernetes.pod.name';
const CONTAINER_NAME = 'io.kubernetes.container.name';

/** Runs a command in the node; a non-zero exit throws with its output. */
export async function nodeExec(ctx: ScenarioContext, cmd: string[]): Promise<string> {
  const r = await ctx.backend.host.exec(cmd);
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed on ${ctx.nodeName}: ${r.output}`);
  return r.output;
}

/** The cell's pods as the API has them, by name. */
export async function podsByName(ctx: ScenarioContext): Promise<Map<string, V1Pod>> {
  const list = await ctx.core.listNamespacedPod({ namespace: ctx.namespace });
  return new Map(list.items.map((p) => [p.metadata!.name!, p]));
}

/** What the runtime holds for the cell's namespace, per pod uid. */
export interface RuntimeHoldings {
  sandboxes: CriItem[];
  containers: CriItem[];
}

export async function runtimeHoldings(ctx: ScenarioContext): Promise<RuntimeHoldings> {
  const labelSelector = { 'io.kubernetes.pod.namespace': ctx.namespace };
  const [sandboxes, containers] = await Promise.all([
    ctx.cri.listPodSandbox({ labelSelector }),
    ctx.cri.listContainers({ labelSelector }),
  ]);
  return { sandboxes, containers };
}

/**
 * Compares the runtime with the API: what runs for no pod (a ready sandbox or running container
 * with a uid no pod has), and pods without exactly one ready sandbox and one running instance of
 * each container. Empty lists everywhere mean every pod runs exactly once and nothing else does.
 * (Dead sandboxes and containers are container GC's to remove, on its own period.)
 */
export function reconcile(pods: Map<string, V1Pod>, held: RuntimeHoldings) {
  const uids = new Set([...pods.values()].map((p) => p.metadata!.uid!));
  const unowned = [...held.sandboxes, ...held.containers]
    .filter((i) => (i.state === 'ready' || i.state === 'running') && !uids.has(i.labels[POD_UID] ?? ''))
    .map((i) => `${i.labels[POD_NAME]}:${i.id.slice(0, 12)}:${i.state}`);
  const readySandboxes = count(
    held.sandboxes.filter((s) => s.state === 'ready').map((s) => s.labels[POD_NAME]),
  );
  const running = count(
    held.containers
      .filter((c) => c.state === 'running')
      .map((c) => `${c.labels[POD_NAME]}/${c.labels[CONTAINER_NAME]}`),
  );
  const notOnce = (counts: Map<string | undefined, number>, keys: string[]) =>
    keys.filter((k) => counts.get(k) !== 1).map((k) => `${k}: ${counts.get(k) ?? 0}`);
  const names = [...pods.keys()];
  const containerKeys = [...pods.values()].flatMap((p) =>
    (p.spec?.containers ?? []).map((c) => `${p.metadata!.name}/${c.name}`),
  );
  return {
    unowned,
    readySandboxesNotOne: notOnce(readySandboxes, names),
    runningContainersNotOne: notOnce(running, containerKeys),
  };
}

function count(keys: (string | undefined)[]): Map<string | undefined, number> {
  const m = new Map<string | undefined, number>();
  for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
}

/** The agent's view of each running container: its CRI id and restart count, by pod/container. */
export function containerView(pods: Map<string, V1Pod>): Map<string, { id: string; restartCount: number }> {
  const view = new Map<string, { id: string; restartCount: number }>();
  for (const [name, pod] of pods) {
    for (const s of pod.status?.containerStatuses ?? []) {
      if (!s.state?.running || !s.containerID) continue;
      view.set(`${name}/${s.name}`, {
        id: s.containerID.replace(/^[a-z]+:\/\//, ''),
        restartCount: s.restartCount,
      });
    }
  }
  return view;
}

/**
 * restartCount may grow only for containers that really died. Given the agent's view from before
 * a fault and the pods after it: a container whose instance from before still runs in the runtime
 * keeps its restartCount; one that was replaced shows the death (lastState.terminated) with a
 * higher count. Returns the violations.
 */
export function restartViolations(
  before: Map<string, { id: string; restartCount: number }>,
  after: Map<string, V1Pod>,
  held: RuntimeHoldings,
): string[] {
  const running = new Set(held.containers.filter((c) => c.state === 'running').map((c) => c.id));
  const out: string[] = [];
  for (const [key, was] of before) {
    const [podName, container] = key.split('/') as [string, string];
    const status = after.get(podName)?.status?.containerStatuses?.find((s) => s.name === container);
    if (!status) {
      out.push(`${key}: no status after the fault`);
      continue;
    }
    const id = status.containerID?.replace(/^[a-z]+:\/\//, '');
    if (id === was.id && running.has(was.id)) {
      if (status.restartCount !== was.restartCount)
        out.push(
          `${key}: still the same instance, restartCount ${was.restartCount} -> ${status.restartCount}`,
        );
    } else if (status.restartCount <= was.restartCount || !status.lastState?.terminated) {
      out.push(
        `${key}: replaced (${was.id.slice(0, 12)} -> ${id?.slice(0, 12)}) but restartCount ${was.restartCount} -> ${status.restartCount}, lastState ${JSON.stringify(status.lastState ?? {})}`,
      );
    }
  }
  return out;
}

/**
 * Cuts the node off from the apiserver inside the node's network namespace (iptables DROP both
 * ways, as a lost link looks: no RST, no ICMP); the returned function heals it. Nothing else on the
 * node's network changes.
 */
export async function partitionFromApiserver(ctx: ScenarioContext): Promise<() => Promise<void>> {
  const ip = (await nodeExec(ctx, ['getent', 'hosts', 'apiserver'])).trim().split(/\s+/)[0];
  if (!ip || !/^[\d.]+$/.test(ip)) throw new Error(`cannot resolve the apiserver in ${ctx.nodeName}: ${ip}`);
  const rules = [
    ['OUTPUT', '-d', ip],
    ['INPUT', '-s', ip],
  ];
  for (const r of rules) await nodeExec(ctx, ['iptables', '-I', ...r, '-j', 'DROP']);
  return async () => {
    for (const r of rules) await nodeExec(ctx, ['iptables', '-D', ...r, '-j', 'DROP']);
  };
}
