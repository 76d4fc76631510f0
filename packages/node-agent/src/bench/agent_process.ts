// The agent as its own process for the benchmark (so its RSS is its own): flags plus the
// runtime-manager options an agent outside its node needs, as JSON in argv[2].
import type { RuntimeManagerOptions } from '@kh/runtime-manager';
import { run } from '../cli.js';
import { parseFlags } from '../config/flags.js';
import { loadKubeletConfiguration, type PartialKubeletConfiguration } from '../config/load.js';
import { stderrLogger } from '../util/log.js';

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
await run(flags.options, loaded, stderrLogger(flags.options.v), abort.signal, {
  runtimeManager: spec.runtimeManager,
});
