import type { ConformanceCase } from '../framework/framework.js';
import { container } from '../groups/container.js';
import { events } from '../groups/events.js';
import { exec } from '../groups/exec.js';
import { idempotence } from '../groups/idempotence.js';
import { image } from '../groups/image.js';
import { logs } from '../groups/logs.js';
import { mountPropagation } from '../groups/mount_propagation.js';
import { networking } from '../groups/networking.js';
import { noNewPrivs } from '../groups/no_new_privs.js';
import { privileged } from '../groups/privileged.js';
import { runtimeInfo } from '../groups/runtime_info.js';
import { sandbox } from '../groups/sandbox.js';
import { seccomp } from '../groups/seccomp.js';
import { securityContext } from '../groups/security_context.js';
import { stats } from '../groups/stats.js';
import { streaming } from '../groups/streaming.js';

/** Every case, in report order. */
export const ALL_CASES: readonly ConformanceCase[] = [
  ...runtimeInfo,
  ...sandbox,
  ...container,
  ...exec,
  ...streaming,
  ...logs,
  ...stats,
  ...image,
  ...idempotence,
  ...networking,
  ...securityContext,
  ...privileged,
  ...noNewPrivs,
  ...seccomp,
  ...mountPropagation,
  ...events,
];
