import { configmaps } from './configmaps.js';
import { events, eventsV1 } from './events.js';
import { leases } from './leases.js';
import { namespaces } from './namespaces.js';
import { nodes } from './nodes.js';
import { pods } from './pods.js';
import { priorityclasses } from './priorityclasses.js';
import { clusterrolebindings, clusterroles, rolebindings, roles } from './rbac.js';
import type { ResourceDef } from './resource.js';
import { selfsubjectaccessreviews, subjectaccessreviews, tokenreviews } from './reviews.js';
import { runtimeclasses } from './runtimeclasses.js';
import { secrets } from './secrets.js';
import { selfsubjectreviews, selfsubjectreviewsV1beta1 } from './selfsubjectreviews.js';
import { serviceaccounts } from './serviceaccounts.js';
import { services } from './services.js';

/** Every served resource, in discovery order. */
export const RESOURCES: ResourceDef[] = [
  configmaps,
  events,
  namespaces,
  nodes,
  pods,
  secrets,
  serviceaccounts,
  services,
  leases,
  eventsV1,
  selfsubjectreviews,
  selfsubjectreviewsV1beta1,
  tokenreviews,
  subjectaccessreviews,
  selfsubjectaccessreviews,
  clusterroles,
  clusterrolebindings,
  roles,
  rolebindings,
  runtimeclasses,
  priorityclasses,
];

export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}
