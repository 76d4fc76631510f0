// A cell's pod start-up breakdown: the agent's record of each pod's steps, read through the
// apiserver's node proxy (GET /api/v1/nodes/<node>/proxy/debug/startup, as the harness's admin),
// with each pod's creation taken from the cell's timeline, where the harness's own watch first
// showed the pod.
import { request } from 'node:https';
import type { PodStartupList } from '@kh/node-agent';
import type { KubeConfig } from '@kubernetes/client-node';
import type { StartupBreakdown, TimelineEntry } from '../results/model.js';
import { type AgentStartupRecord, podStartupRow, startupBreakdown } from '../results/startup.js';

const FETCH_TIMEOUT_MS = 10_000;

/** The agent's records of the pods of one namespace (its GET /debug/startup). */
export async function agentStartupRecords(
  kc: KubeConfig,
  node: string,
  namespace: string,
): Promise<AgentStartupRecord[]> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('kubeconfig has no current cluster');
  const url = new URL(
    `/api/v1/nodes/${encodeURIComponent(node)}/proxy/debug/startup?namespace=${encodeURIComponent(namespace)}`,
    server,
  );
  const opts: Parameters<typeof request>[1] = { method: 'GET', timeout: FETCH_TIMEOUT_MS };
  await kc.applyToHTTPSOptions(opts);
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(url, opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(text)
          : reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${FETCH_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
  const list = JSON.parse(body) as Partial<PodStartupList>;
  return list.items ?? [];
}

/**
 * The breakdown of the pods the agent recorded. A pod's creation is the first time the cell's
 * timeline showed it (`start` is the cell's start, the timeline's zero); a later pod of the same
 * name, which the timeline does not tell apart, starts at the agent's sight of it.
 */
export function cellStartupBreakdown(
  records: readonly AgentStartupRecord[],
  timeline: readonly TimelineEntry[],
  start: number,
): StartupBreakdown | undefined {
  const firstSight = new Map<string, number>();
  for (const e of timeline) {
    const pod = e.detail?.pod;
    if (
      e.kind === 'pod-phase' &&
      e.detail?.phase !== undefined &&
      typeof pod === 'string' &&
      !firstSight.has(pod)
    )
      firstSight.set(pod, start + e.t);
  }
  const earliest = new Map<string, AgentStartupRecord>();
  for (const r of records) {
    const key = `${r.namespace}/${r.name}`;
    const seen = earliest.get(key);
    if (!seen || r.seenAt < seen.seenAt) earliest.set(key, r);
  }
  let incomplete = 0;
  const rows = records.flatMap((r) => {
    const key = `${r.namespace}/${r.name}`;
    const row = podStartupRow(r, earliest.get(key) === r ? firstSight.get(key) : undefined);
    if (!row) incomplete++;
    return row ? [row] : [];
  });
  return startupBreakdown(rows, incomplete);
}
