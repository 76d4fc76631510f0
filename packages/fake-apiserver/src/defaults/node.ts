import type { KObject } from '../meta/object.js';

/** SetDefaults_NodeStatus: allocatable defaults to capacity. */
export function defaultNode(node: KObject) {
  node.spec ??= {};
  if (node.status?.capacity && !node.status.allocatable)
    node.status.allocatable = { ...node.status.capacity };
}
