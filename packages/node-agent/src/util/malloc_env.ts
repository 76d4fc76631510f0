// The glibc malloc setting the agent runs with (src/launcher.ts sets it before the agent starts).
//
// V8 compiles the agent's bundle (3.7 MB of source) in one go, in zone memory that peaks at about
// 24 MB and is freed right after, in segments of at most 32 KB. glibc keeps freed blocks below its
// mmap threshold in the heap, where later allocations pin them: about 20 MiB of the agent's
// anonymous RSS for the life of the process. From the threshold up, glibc maps each block by
// itself and unmaps it when it is freed. glibc reads the threshold once, when the process starts.

/** glibc's mmap threshold for the agent, in bytes: V8's largest zone segment. */
export const AGENT_MMAP_THRESHOLD = 32 * 1024;

/**
 * The environment to run the agent in, or undefined when `env` already chose a threshold (through
 * MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES): the operator's choice stands.
 */
export function agentMallocEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv | undefined {
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined) return undefined;
  if (env.GLIBC_TUNABLES?.includes('glibc.malloc.mmap_threshold')) return undefined;
  return { ...env, MALLOC_MMAP_THRESHOLD_: String(AGENT_MMAP_THRESHOLD) };
}
