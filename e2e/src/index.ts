// The scenario suite the harness runs on every backend, in this order.
import type { Scenario } from '@kh/harness';
import { diskEviction } from './scenarios/disk-eviction.js';
import { eviction } from './scenarios/eviction.js';
import { gc } from './scenarios/gc.js';
import { kubectl } from './scenarios/kubectl.js';
import { nodeRegistration } from './scenarios/node-registration.js';
import { podLifecycle } from './scenarios/pod-lifecycle.js';
import { probes } from './scenarios/probes.js';
import { probesSidecar, probesUpstream } from './scenarios/probes-upstream.js';
import { statusReporting } from './scenarios/status-reporting.js';

export const scenarios: Scenario[] = [
  nodeRegistration,
  podLifecycle,
  probes,
  probesUpstream,
  probesSidecar,
  statusReporting,
  gc,
  eviction,
  diskEviction,
  kubectl,
];
