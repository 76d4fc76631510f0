#!/usr/bin/env node
// The node-agent command as it ships (dist/bundle/node-agent.mjs; scripts/bundle.mjs): a small
// entry that runs the agent's bundle (node-agent-main.mjs, beside it) with glibc's mmap threshold
// set (util/malloc_env.ts says why). glibc reads it only at process start, so the first run execs
// itself again with it set: the same pid, argv and Node options, before the bundle is compiled.
import { agentMallocEnv } from './util/malloc_env.js';

// A parent's IPC channel does not survive the exec: a parent that forks the agent (the benchmark)
// sets the environment itself.
const env = agentMallocEnv(process.env);
if (env && !process.channel && typeof process.execve === 'function') {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}
// The bundle beside this file: <name>.mjs runs <name>-main.mjs (the benchmark's agent likewise).
await import(import.meta.url.replace(/\.mjs$/, '-main.mjs'));
