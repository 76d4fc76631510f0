// V8 heap settings for the agent, a long-running process whose live heap is small (about 38 MB
// with 110 pods, bundled; most of it code and source text) but whose pod bursts churn through
// short-lived objects. With V8's defaults the heap grew to ~200 MB of mostly garbage between
// full collections (RSS ~290 MB, before the bundle); --optimize-for-size keeps the young
// generation small and the old generation growing slowly (RSS ~122 MiB bundled, for about 15% of
// the agent's CPU in GC). It must be set before the modules run, so the entry points import this
// module first.
import { setFlagsFromString } from 'node:v8';

export const AGENT_V8_FLAGS = ['--optimize-for-size'];

for (const flag of AGENT_V8_FLAGS) setFlagsFromString(flag);
