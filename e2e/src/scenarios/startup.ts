import { CriClient } from '@kh/cri-api';
import {
  type AgentStartupRecord,
  percentiles,
  podStartupRow,
  rowProblems,
  type Scenario,
  type ScenarioContext,
  type StartupFloor,
  startupBreakdown,
} from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { podsByName } from '../support/faults.js';
import { createPod, podFor, SLEEPER, sh } from '../support/pods.js';

const PODS = 30;
/** Single pods started one after another for the floor; their median is the floor. */
const FLOOR_RUNS = 5;

/**
 * Pod start-up against the runtime's own cost (issue 21). The floor is what the runtime takes for a
 * pod with nothing of ours in between: RunPodSandbox (CNI included), CreateContainer and
 * StartContainer straight over CRI from the harness, one pod at a time and then 30 at once. Then 30
 * pods at once through the API and the agent: all must run, and the agent's record of every pod's
 * steps must be complete, in order and add up to its total. How far above the floor they are is
 * recorded, not asserted: the machine's load decides it, and the report holds it against the target.
 */
export const startup: Scenario = {
  name: 'startup',
  estimateMs: 35_000,
  // The floor is measured on the node: nothing else may start pods there meanwhile.
  isolation: 'node',
  // 60 pods started in two bursts of 30: not beside the probe suites, whose timeouts it would break.
  load: 'heavy',
  description: `${PODS} pods at once: all Running, each pod's start-up steps (watch, admission, worker, sandbox, image, create, start, status) complete, in order and adding up to its total; p50/p99 against the runtime's bare floor (RunPodSandbox + CreateContainer + StartContainer straight over CRI, one pod and ${PODS} at once)`,
  needs: ['real-containers'],
  timeoutMs: 300_000,
  async run(ctx) {
    const { check } = ctx;
    // The image is there before anything is timed: pulls are not start-up cost here.
    await ctx.cri.pullImage(ctx.images.busybox);
    // The agent's housekeeping would kill the floor's pods as orphans (pods the API does not
    // know, as the kubelet's does), and its CPU is not the runtime's cost: it is stopped meanwhile.
    await ctx.agent.stop();
    let floor: Required<StartupFloor>;
    try {
      floor = await measureFloor(ctx);
    } finally {
      await ctx.agent.start();
    }
    ctx.note(
      `bare floor over CRI: one pod ${ms(floor.singleMs)} (median of ${FLOOR_RUNS}); ${PODS} at once p50 ${ms(floor.burst.p50)}, p99 ${ms(floor.burst.p99)}`,
    );
    ctx.recordStartupFloor(floor);

    const names = Array.from({ length: PODS }, (_, i) => `start-${i}`);
    const createdAt = new Map<string, number>();
    await Promise.all(
      names.map(async (name) => {
        const at = Date.now();
        await createPod(ctx, podFor(ctx, name, { containers: [sh(ctx, 'c', SLEEPER)] }));
        createdAt.set(name, at);
      }),
    );
    await check.eventually(
      `all ${PODS} pods Running`,
      () => podsByName(ctx),
      (pods) => names.every((n) => running(pods.get(n))),
      {
        timeoutMs: 180_000,
        intervalMs: 500,
        describe: (pods) => names.filter((n) => !running(pods.get(n))),
      },
    );

    // The agent records the status write once the API server has answered it: a moment after
    // the pods show Running.
    const records = await check.eventually(
      `the agent recorded every start-up step of all ${PODS} pods`,
      () => agentRecords(ctx),
      (rs) => names.every((n) => rs.some((r) => r.name === n && podStartupRow(r) !== undefined)),
      {
        timeoutMs: 15_000,
        intervalMs: 500,
        describe: (rs) => rs.filter((r) => podStartupRow(r) === undefined),
      },
    );
    const rows = records.flatMap((r) => podStartupRow(r, createdAt.get(r.name)) ?? []);
    check.equal(
      "each pod's stages are in order (none negative) and add up to its total",
      rows.flatMap(rowProblems),
      [],
    );
    const b = startupBreakdown(rows)!;
    const ratio = (v: number, floorMs: number) => Math.round((v / floorMs) * 100) / 100;
    ctx.note(
      `${PODS} pods through the agent: p50 ${ms(b.total.p50)}, p99 ${ms(b.total.p99)} from create to status written = ${ratio(b.total.p50, floor.singleMs)}× / ${ratio(b.total.p99, floor.singleMs)}× one bare pod, ${ratio(b.total.p50, floor.burst.p50)}× / ${ratio(b.total.p99, floor.burst.p99)}× ${PODS} bare pods at once`,
      {
        total: b.total,
        floor,
        stagesP50: Object.fromEntries(b.stages.map((st) => [st.stage, st.p50])),
      },
    );
    ctx.note(`stage p50s: ${b.stages.map((st) => `${st.stage} ${ms(st.p50)}`).join(', ')}`);
  },
};

const running = (pod: V1Pod | undefined): boolean =>
  pod?.status?.phase === 'Running' &&
  (pod.status.containerStatuses ?? []).length === 1 &&
  (pod.status.containerStatuses ?? []).every((c) => c.state?.running);

const ms = (v: number) => `${Math.round(v)} ms`;

/** The agent's start-up records of the cell's pods, read through the apiserver's node proxy. */
async function agentRecords(ctx: ScenarioContext): Promise<AgentStartupRecord[]> {
  const r = await ctx.kubectl([
    'get',
    '--raw',
    `/api/v1/nodes/${ctx.nodeName}/proxy/debug/startup?namespace=${ctx.namespace}`,
  ]);
  if (r.code !== 0) throw new Error(`kubectl get --raw debug/startup: ${r.stderr.trim()}`);
  return (JSON.parse(r.stdout) as { items: AgentStartupRecord[] }).items;
}

/**
 * RunPodSandbox + CreateContainer + StartContainer of a busybox pod straight over CRI, in the
 * node's pod cgroup, with the pod network (CNI), as the agent asks for them; one pod at a time,
 * then PODS at once. Everything it made is removed again.
 */
async function measureFloor(ctx: ScenarioContext): Promise<Required<StartupFloor>> {
  const cri = await CriClient.connect(ctx.backend.hostCriEndpoint, { timeoutMs: 120_000 });
  const made: string[] = [];
  let seq = 0;
  const onePod = async (): Promise<number> => {
    const i = seq++;
    const name = `floor-${i}`;
    const sandboxConfig = {
      metadata: { name, namespace: ctx.namespace, uid: `${ctx.namespace}-${name}`, attempt: 0 },
      hostname: name,
      labels: { 'kh.floor': ctx.namespace },
      linux: { cgroupParent: ctx.backend.cgroupParent ?? '' },
    };
    const t0 = performance.now();
    const { podSandboxId } = await cri.runPodSandbox({ config: sandboxConfig });
    made.push(podSandboxId);
    const { containerId } = await cri.createContainer({
      podSandboxId,
      sandboxConfig,
      config: {
        metadata: { name: 'c', attempt: 0 },
        image: { image: ctx.images.busybox },
        command: ['sh', '-c', SLEEPER],
        labels: { 'kh.floor': ctx.namespace },
      },
    });
    await cri.startContainer({ containerId });
    return performance.now() - t0;
  };
  try {
    const single: number[] = [];
    for (let i = 0; i < FLOOR_RUNS; i++) single.push(await onePod());
    const burst = percentiles(await Promise.all(Array.from({ length: PODS }, onePod)));
    return {
      singleMs: round(percentiles(single).p50),
      burst: { pods: PODS, p50: round(burst.p50), p90: round(burst.p90), p99: round(burst.p99) },
    };
  } finally {
    await Promise.all(
      made.map(async (id) => {
        await cri.stopPodSandbox({ podSandboxId: id }).catch(() => {});
        await cri.removePodSandbox({ podSandboxId: id }).catch(() => {});
      }),
    );
    cri.close();
  }
}

const round = (v: number) => Math.round(v * 10) / 10;
