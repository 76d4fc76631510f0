// The agent as its own process for the benchmark (so its RSS is its own): flags plus the
// runtime-manager options an agent outside its node needs, as JSON in argv[2]. Over the IPC
// channel the bench asks for what only the process can see: its memory breakdown, a heap
// snapshot, and the API requests it sent (from undici's diagnostics channel), by method and
// resource. `npm run bench`
// bundles it like the shipped command (bench/dist/bench-agent.mjs, the launcher, runs
// bench-agent-main.mjs), so the bench measures that code.
import '../src/v8_flags.js';
import { subscribe } from 'node:diagnostics_channel';
import { getHeapCodeStatistics, getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import type { RuntimeManagerOptions } from '@kh/runtime-manager';
import { run } from '../src/cli.js';
import { parseFlags } from '../src/config/flags.js';
import { loadKubeletConfiguration, type PartialKubeletConfiguration } from '../src/config/load.js';
import { stderrLogger } from '../src/util/log.js';

interface AgentSpec {
  flags: string[];
  config: PartialKubeletConfiguration;
  runtimeManager: Partial<RuntimeManagerOptions>;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as AgentSpec;
const flags = parseFlags(spec.flags);
if (flags.errors.length > 0) throw new Error(`bad flags: ${JSON.stringify(flags.errors)}`);
const loaded = await loadKubeletConfiguration(undefined, { ...flags.configOverrides, ...spec.config });
const abort = new AbortController();
process.once('SIGTERM', () => abort.abort());
// The benchmark is gone (killed before its teardown): an agent left running would hold its node.
process.once('disconnect', () => abort.abort());

const apiRequests: Record<string, number> = {};
subscribe('undici:request:create', (m) => {
  const { method, path } = (m as { request: { method: string; path: string } }).request;
  // GET /api/v1/namespaces/default/pods/web-1/status -> GET pods/status
  const parts = (path.split('?')[0] ?? '').split('/').filter(Boolean);
  const ns = parts.indexOf('namespaces');
  const rest = ns >= 0 && parts.length > ns + 2 ? parts.slice(ns + 2) : parts.slice(-2);
  const key = `${method} ${[rest[0], rest[2]].filter(Boolean).join('/')}`;
  apiRequests[key] = (apiRequests[key] ?? 0) + 1;
});
// New connections to the API server: each is a TLS handshake on both ends.
subscribe('undici:client:connected', () => {
  apiRequests.connections = (apiRequests.connections ?? 0) + 1;
});

process.on('message', (msg) => {
  if (msg === 'api-requests') process.send?.({ ...apiRequests });
  if (typeof msg === 'string' && msg.startsWith('heap-snapshot ')) {
    process.send?.({ written: writeHeapSnapshot(msg.slice('heap-snapshot '.length)) });
  }
  if (msg !== 'memory') return;
  const kib = (bytes: number) => Math.round(bytes / 1024);
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((s) => [
      s.space_name,
      { usedKiB: kib(s.space_used_size), committedKiB: kib(s.physical_space_size) },
    ]),
  );
  // What V8 itself costs: heap committed vs used, malloc'ed memory, compiled code and the source
  // text it keeps for every script.
  process.send?.({
    memoryUsage: process.memoryUsage(),
    heapStatistics: getHeapStatistics(),
    heapCodeStatistics: getHeapCodeStatistics(),
    heapSpaces: spaces,
  });
});
await run(flags.options, loaded, stderrLogger(flags.options.v), abort.signal, {
  runtimeManager: spec.runtimeManager,
});
process.disconnect?.(); // the IPC channel would keep the event loop alive
