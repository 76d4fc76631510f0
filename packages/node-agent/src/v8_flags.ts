// V8 heap settings for the agent, a long-running process whose live heap is small (about 60 MB
// with 110 pods, most of it @kubernetes/client-node's code) but whose pod bursts churn through
// short-lived objects. With V8's defaults the heap grew to ~200 MB of mostly garbage between
// full collections (RSS ~290 MB); --optimize-for-size keeps the young generation small and the
// old generation growing slowly (RSS ~140 MB, same CPU per pod in the benchmark). It must be
// set before the big modules load, so the command imports this module first.
import { setFlagsFromString } from 'node:v8';

export const AGENT_V8_FLAGS = ['--optimize-for-size'];

for (const flag of AGENT_V8_FLAGS) setFlagsFromString(flag);
