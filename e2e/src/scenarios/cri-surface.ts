import type { KubectlResult, Scenario } from '@kh/harness';
import { createPod, podFor, sh, waitForPod, waitForRunning } from '../support/pods.js';

const outcome = (r: KubectlResult) => ({ code: r.code, stdout: r.stdout.trim(), stderr: r.stderr.trim() });

/**
 * The kubelet API endpoints that reach the CRI methods no pod lifecycle calls (issue 35), through
 * the API server's node proxy as a user reaches them: /stats/summary and /metrics/resource under
 * PodAndContainerStatsFromCRI (ListPodSandboxStats), a resize lowering a memory limit
 * (PodSandboxStats), and /checkpoint (CheckpointContainer), whose
 * answer is the archive's path, or the kubelet's 500 when the runtime does not implement it. The
 * run's CRI contract table then shows what each runtime made of these calls.
 */
export const criSurface: Scenario = {
  name: 'cri-surface',
  description:
    '/stats/summary and /metrics/resource from ListPodSandboxStats (PodAndContainerStatsFromCRI), a memory limit lowered after PodSandboxStats, /checkpoint: 404s, then the archive or the kubelet 500 for an unimplemented CheckpointContainer',
  // It restarts the agent with a feature gate on.
  isolation: 'node',
  needs: ['real-containers'],
  estimateMs: 30_000,
  // Room past the 5 min pod waits (the pod helpers' PodStart default) for the rest of the cell.
  timeoutMs: 420_000,
  async run(ctx) {
    const { check } = ctx;
    await ctx.reconfigureAgent({ featureGates: { PodAndContainerStatsFromCRI: true } });
    try {
      const memory = (m: string) => ({ requests: { memory: m }, limits: { memory: m } });
      await createPod(
        ctx,
        podFor(ctx, 'box', { containers: [sh(ctx, 'box', 'sleep 3600', { resources: memory('20Mi') })] }),
      );
      await waitForRunning(ctx, 'box');
      const proxy = `/api/v1/nodes/${ctx.nodeName}/proxy`;

      // The pod's numbers come from ListPodSandboxStats, or ListContainerStats where the runtime
      // lacks it; either way the summary and the resource metrics name the pod and its container.
      await check.eventually(
        '/stats/summary under PodAndContainerStatsFromCRI has box with its container and a working set',
        async () => {
          const r = await ctx.kubectl(['get', '--raw', `${proxy}/stats/summary`]);
          const s = JSON.parse(r.stdout) as {
            pods?: {
              podRef?: { name?: string; namespace?: string };
              containers?: { name?: string }[];
              memory?: { workingSetBytes?: number };
            }[];
          };
          return s.pods?.find((p) => p.podRef?.name === 'box' && p.podRef.namespace === ctx.namespace);
        },
        (p) =>
          !!p && (p.containers ?? []).some((c) => c.name === 'box') && (p.memory?.workingSetBytes ?? 0) > 0,
        { timeoutMs: 30_000, expected: 'pod box, container box, memory.workingSetBytes > 0' },
      );
      const metrics = await ctx.kubectl(['get', '--raw', `${proxy}/metrics/resource`]);
      const line = new RegExp(
        `^container_memory_working_set_bytes\\{container="box",namespace="${ctx.namespace}",pod="box"\\} [0-9.e+]+ \\d+$`,
        'm',
      );
      check.ok(
        "/metrics/resource has box's working set and resource_scrape_error 0",
        metrics.code === 0 && line.test(metrics.stdout) && /^resource_scrape_error 0$/m.test(metrics.stdout),
        metrics.code === 0
          ? metrics.stdout.split('\n').filter((l) => /box|scrape_error/.test(l))
          : outcome(metrics),
        'a container_memory_working_set_bytes sample for box, resource_scrape_error 0',
      );

      // A resize that lowers a memory limit first reads the pod's use (PodSandboxStats, then its
      // containers' ListContainerStats), as the kubelet's PodCPUAndMemoryStats does.
      const patch = { spec: { containers: [{ name: 'box', resources: memory('15Mi') }] } };
      const resize = await ctx.kubectl(
        [
          '-n',
          ctx.namespace,
          'patch',
          'pod',
          'box',
          '--subresource',
          'resize',
          '--patch',
          JSON.stringify(patch),
        ],
        { version: '1.33' },
      );
      check.equal(
        'kubectl 1.33 patch --subresource resize lowers box to 15Mi',
        resize.stdout.trim(),
        'pod/box patched',
      );
      await waitForPod(
        ctx,
        'box',
        'its memory limit lowered to 15Mi, no resize condition left',
        (p) =>
          p.status?.containerStatuses?.[0]?.resources?.limits?.memory === '15Mi' &&
          !(p.status?.conditions ?? []).some((c) => c.type.startsWith('PodResize')),
      );

      // /checkpoint is POST only; kubectl create --raw posts.
      const post = (path: string) =>
        ctx.kubectl(['create', '--raw', `${proxy}/checkpoint/${path}`, '-f', '-'], { input: '{}' });
      const unknown = await post(`${ctx.namespace}/box/nope`);
      check.ok(
        '/checkpoint of a container the pod does not have: 404',
        unknown.code !== 0 && /NotFound/.test(unknown.stderr),
        outcome(unknown),
        'Error from server (NotFound)',
      );
      const r = await post(`${ctx.namespace}/box/box`);
      const archive = r.code === 0 ? (JSON.parse(r.stdout) as { items?: string[] }).items?.[0] : undefined;
      const unimplemented = new RegExp(
        `checkpointing of ${ctx.namespace}/box/box failed \\(rpc error: code = Unimplemented desc = `,
      ).test(r.stderr);
      check.ok(
        '/checkpoint of box: the archive path, or the kubelet 500 for an unimplemented CheckpointContainer',
        (archive !== undefined && archive.endsWith('.tar')) || (r.code !== 0 && unimplemented),
        outcome(r),
        '{"items":["<root-dir>/checkpoints/checkpoint-box_<ns>-box-<time>.tar"]} or InternalError "checkpointing of <ns>/box/box failed (rpc error: code = Unimplemented desc = ...)"',
      );
      ctx.note(
        archive ? `checkpoint written: ${archive}` : 'the runtime does not implement CheckpointContainer',
        outcome(r),
      );
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
