// The agent benchmark's command line (bench/cli.ts): its options, their defaults and checks.
import type { ParseArgsOptionsConfig } from 'node:util';
import { isNodeRelease, NODE_RELEASES, numberOption, UsageError } from '@kh/testkit';

export const USAGE = `Usage: npm run bench -w @kh/node-agent [-- options]

Pod start-up latency as Kubernetes' SLO measures it, on real containerd: N pods created at once,
each timed from its creation to all its containers started as observed through a list/watch that
resumes and relists like an informer; the same pods started with bare CRI calls give the runtime's
own share. The two alternate for a few rounds, and the agent's CPU is sampled while its pods
start. Then the agent's memory as upstream's density test reads it, with --density-pods and with
--rss-pods running. Results, each figure against issue 32's target, go to .reports/bench/.
Everything it creates carries kh.* labels, so \`kubelet-harness cleanup\` removes what a killed
run leaves.

Options:
  --pods <n>                      pods created at once in each round (default 30)
  --rounds <n>                    rounds of bare CRI then the agent (default 3)
  --density-pods <n>              memory with this many pods, the density test's batch (default 10; 0 skips)
  --rss-pods <n>                  memory with this many pods, maxPods (default 110; 0 skips)
  --settle-seconds <n>            memory read each second this long after each memory step (default 30)
  --label <name>                  names the JSON, .reports/bench/<label>-<time>.json (default run)
  --agent-node-options <flags>    Node options of the agent, space-separated,
                                  e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  --agent-runtime-options <json>  runtime manager options over the bench's, e.g. '{"images":{"serializeImagePulls":false}}'
  --agent-config <json>           KubeletConfiguration fields over the bench's,
                                  e.g. '{"featureGates":{"EventedPLEG":true}}'
  --agent-env <NAME=value ...>    environment of the agent, space-separated, e.g. "MALLOC_ARENA_MAX=2"
  --heap-snapshot <file>          after the memory steps, the agent's heap snapshot, summarised into the JSON
  --node-release <release>        the node image's Debian release (${NODE_RELEASES.join(', ')}), to time one
                                  containerd against another (default the harness's default node)
  -h, --help                      show this help`;

export const OPTIONS = {
  pods: { type: 'string', default: '30' },
  rounds: { type: 'string', default: '3' },
  'density-pods': { type: 'string', default: '10' },
  'rss-pods': { type: 'string', default: '110' },
  'settle-seconds': { type: 'string', default: '30' },
  label: { type: 'string', default: 'run' },
  'agent-node-options': { type: 'string', default: '' },
  'agent-runtime-options': { type: 'string', default: '{}' },
  'agent-config': { type: 'string', default: '{}' },
  'agent-env': { type: 'string', default: '' },
  'heap-snapshot': { type: 'string', default: '' },
  'node-release': { type: 'string', default: '' },
} satisfies ParseArgsOptionsConfig;

type Values = { [K in keyof typeof OPTIONS]: string };

/** A JSON object option: merged over the bench's own settings, so nothing else will do. */
function jsonObject(flag: string, value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new UsageError(`${flag} must be a JSON object: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`${flag} must be a JSON object, not ${value}`);
  return parsed as Record<string, unknown>;
}

/** What bench/cli.ts runs with, from the parsed options (testkit's benchArgs). */
export function agentBenchArgs(v: Values) {
  if (v['node-release'] && !isNodeRelease(v['node-release']))
    throw new UsageError(
      `--node-release must be one of ${NODE_RELEASES.join(', ')}, not "${v['node-release']}"`,
    );
  const env = v['agent-env'].split(' ').filter(Boolean);
  const notEnv = env.find((kv) => kv.indexOf('=') < 1);
  if (notEnv) throw new UsageError(`--agent-env takes NAME=value pairs, not "${notEnv}"`);
  return {
    pods: numberOption('--pods', v.pods),
    rounds: numberOption('--rounds', v.rounds),
    densityPods: numberOption('--density-pods', v['density-pods']),
    rssPods: numberOption('--rss-pods', v['rss-pods']),
    // RSS right after a burst still holds the burst's garbage; what a node pays for is the steady state.
    settleSeconds: numberOption('--settle-seconds', v['settle-seconds']),
    label: v.label,
    agentNodeOptions: v['agent-node-options'].split(' ').filter(Boolean),
    agentRuntimeOptions: jsonObject('--agent-runtime-options', v['agent-runtime-options']),
    agentConfig: jsonObject('--agent-config', v['agent-config']),
    agentEnv: Object.fromEntries(
      env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    ),
    heapSnapshot: v['heap-snapshot'],
    nodeRelease: isNodeRelease(v['node-release']) ? v['node-release'] : undefined,
  };
}

export type AgentBenchArgs = ReturnType<typeof agentBenchArgs>;
