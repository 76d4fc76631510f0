// GET /metrics/resource: the kubelet's resource metrics (what metrics-server scrapes), node, pod
// and container CPU and working-set memory in Prometheus text, each sample stamped with the time
// its stats were taken. It reads the same stats as /stats/summary, so with the
// PodAndContainerStatsFromCRI gate pods come from ListPodSandboxStats here too. A failed read
// gives scrape_error 1 and no samples, as the kubelet's collector does.
import type { Summary } from './summary.js';

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  stability: 'STABLE' | 'ALPHA';
  samples: { labels: Record<string, string>; value: number; time?: string }[];
}

export const RESOURCE_METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function formatResourceMetrics(summary: Summary | undefined): string {
  const fam = (
    name: string,
    help: string,
    type: Family['type'],
    stability: Family['stability'] = 'STABLE',
  ): Family => ({
    name,
    help,
    type,
    stability,
    samples: [],
  });
  const nodeCpu = fam(
    'node_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the node in core-seconds',
    'counter',
  );
  const nodeMem = fam('node_memory_working_set_bytes', 'Current working set of the node in bytes', 'gauge');
  const podCpu = fam(
    'pod_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the pod in core-seconds',
    'counter',
  );
  const podMem = fam('pod_memory_working_set_bytes', 'Current working set of the pod in bytes', 'gauge');
  const ctrCpu = fam(
    'container_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the container in core-seconds',
    'counter',
  );
  const ctrMem = fam(
    'container_memory_working_set_bytes',
    'Current working set of the container in bytes',
    'gauge',
  );
  const ctrStart = fam(
    'container_start_time_seconds',
    'Start time of the container since unix epoch in seconds',
    'gauge',
  );
  const scrapeHelp = '1 if there was an error while getting container metrics, 0 otherwise';
  const resourceScrapeError = fam('resource_scrape_error', scrapeHelp, 'gauge');
  const scrapeError = fam('scrape_error', scrapeHelp, 'gauge', 'ALPHA');
  for (const f of [resourceScrapeError, scrapeError]) f.samples.push({ labels: {}, value: summary ? 0 : 1 });
  if (summary) {
    const { node } = summary;
    nodeCpu.samples.push({ labels: {}, value: node.cpu.usageCoreNanoSeconds / 1e9, time: node.cpu.time });
    nodeMem.samples.push({ labels: {}, value: node.memory.workingSetBytes, time: node.memory.time });
    for (const pod of summary.pods) {
      const p = { namespace: pod.podRef.namespace, pod: pod.podRef.name };
      podCpu.samples.push({ labels: p, value: pod.cpu.usageCoreNanoSeconds / 1e9, time: pod.cpu.time });
      podMem.samples.push({ labels: p, value: pod.memory.workingSetBytes, time: pod.memory.time });
      for (const c of pod.containers) {
        const l = { container: c.name, ...p };
        ctrCpu.samples.push({ labels: l, value: c.cpu.usageCoreNanoSeconds / 1e9, time: c.cpu.time });
        ctrMem.samples.push({ labels: l, value: c.memory.workingSetBytes, time: c.memory.time });
        if (c.startTime)
          ctrStart.samples.push({ labels: l, value: Date.parse(c.startTime) / 1000, time: c.cpu.time });
      }
    }
  }
  return [ctrCpu, ctrMem, ctrStart, nodeCpu, nodeMem, podCpu, podMem, resourceScrapeError, scrapeError]
    .filter((f) => f.samples.length > 0)
    .map(formatFamily)
    .join('');
}

function formatFamily(f: Family): string {
  const lines = [`# HELP ${f.name} [${f.stability}] ${f.help}`, `# TYPE ${f.name} ${f.type}`];
  for (const s of f.samples) {
    const labels = Object.entries(s.labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    const stamp = s.time ? ` ${Date.parse(s.time)}` : '';
    lines.push(`${f.name}${labels ? `{${labels}}` : ''} ${s.value}${stamp}`);
  }
  return `${lines.join('\n')}\n`;
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
