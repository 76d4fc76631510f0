// V8 heap settings for the agent, a long-running process whose live heap is small (about 38 MB
// with 110 pods, bundled; most of it code and source text) but whose pod bursts churn through
// short-lived objects. With V8's defaults the heap grew to ~200 MB of mostly garbage between
// full collections (RSS ~290 MB, before the bundle); --optimize-for-size keeps the young
// generation small and the old generation growing slowly (RSS ~122 MiB bundled, for about 15% of
// the agent's CPU in GC). Most of the rest of the heap is code: the bytecode of start-up paths and
// of dependencies' code the agent ran once. V8 flushes a function's bytecode after it has gone
// unused through --bytecode-old-age full GCs (6); after 2, and with baseline (Sparkplug) code
// flushed too, the heap's code went from 5.4 to 3.5 MB and RssAnon with 10 pods from 47-50 to
// 43-46 MiB, for no more CPU per pod (in-memory runtime; see the README's benchmark). These flags
// are read as V8 runs, so setting them here works; heap sizes such as --max-semi-space-size are
// fixed when the process starts and would need the node command line. The entry points import
// this module first.
import { setFlagsFromString } from 'node:v8';

export const AGENT_V8_FLAGS = ['--optimize-for-size', '--bytecode-old-age=2', '--flush-baseline-code'];

for (const flag of AGENT_V8_FLAGS) setFlagsFromString(flag);
