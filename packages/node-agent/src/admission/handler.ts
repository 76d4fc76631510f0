// Pod admission as the kubelet's lifecycle package has it: admit handlers, registered in order,
// each judge a new pod next to the pods already admitted, and the first rejection wins. Its
// reason and message become the pod's Failed status and a Warning event. The predicate handler
// (does the pod fit this node) and the eviction manager (node pressure) register here.
import type { V1Pod } from '@kubernetes/client-node';

export interface PodAdmitAttributes {
  pod: V1Pod;
  /** Pods already admitted and not terminated. */
  otherPods: V1Pod[];
}

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

export interface AdmitHandler {
  admit(attrs: PodAdmitAttributes): AdmitResult;
}

/** The registered handlers, asked in the order they were added. */
export class AdmitHandlers implements AdmitHandler {
  private readonly handlers: AdmitHandler[] = [];

  add(handler: AdmitHandler): void {
    this.handlers.push(handler);
  }

  admit(attrs: PodAdmitAttributes): AdmitResult {
    for (const h of this.handlers) {
      const verdict = h.admit(attrs);
      if (!verdict.admit) return verdict;
    }
    return { admit: true };
  }
}
