// The kubelet's operating-system checks at admission, made before the other predicates because
// no preemption helps them: a pod labelled kubernetes.io/os for another OS
// (rejectPodAdmissionBasedOnOSSelector: it reads the pod's labels, and takes the node's label as
// the kubelet's own OS whatever it says, status sync putting it right), and a pod whose spec.os
// names another OS (rejectPodAdmissionBasedOnOSField). The agent's OS is Linux (runtime.GOOS).
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitResult } from './handler.js';

const OS_LABEL = 'kubernetes.io/os';
const NODE_OS = 'linux';

export const PodOSSelectorNodeLabelDoesNotMatch = 'PodOSSelectorNodeLabelDoesNotMatch';
export const PodOSNotSupported = 'PodOSNotSupported';

/** The rejection of a pod for another OS, or undefined when it is for this node's. */
export function podOSRejection(pod: V1Pod): AdmitResult | undefined {
  const labelled = pod.metadata?.labels?.[OS_LABEL];
  if (labelled !== undefined && labelled !== NODE_OS)
    return {
      admit: false,
      reason: PodOSSelectorNodeLabelDoesNotMatch,
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  if (pod.spec?.os && pod.spec.os.name !== NODE_OS)
    return {
      admit: false,
      reason: PodOSNotSupported,
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
  return undefined;
}
