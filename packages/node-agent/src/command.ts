// What another process needs to run the agent (`@kh/node-agent/command`): the command as it
// ships (a launcher and the bundle it runs: scripts/bundle.mjs), the records it writes for others to read, and
// where it puts the node's pods (its kubepods cgroup under cgroupRoot).
import { fileURLToPath } from 'node:url';

/** The built `node-agent` command: dist/bundle/node-agent.mjs. */
export const NODE_AGENT_COMMAND = fileURLToPath(new URL('./bundle/node-agent.mjs', import.meta.url));

export { cgroupRootForKubepods, KUBEPODS_CGROUP } from './cm/cgroup_name.js';
export type { CriCallRecord } from './runtime/cri_call_log.js';
