// What the node lifecycle needs from the runtime: its name and version (nodeInfo), its health
// (Ready), its images (node status) and the Node's pod CIDR. The runtime manager's Runtime
// provides all of it.
import type { Runtime } from '@kh/runtime-manager';

export type NodeRuntime = Pick<Runtime, 'type' | 'version' | 'status' | 'listImages' | 'updatePodCIDR'>;
