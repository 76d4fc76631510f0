// A watch of the cell's namespace's pods, as upstream's informers and watchtools.Until use one:
// started from a list's resourceVersion, it sees a state the pod holds only for milliseconds
// (Succeeded, then deleted), which no poll would.
import type { ScenarioContext } from '@kh/harness';
import { type V1Pod, Watch } from '@kubernetes/client-node';

export interface PodEvent {
  type: string;
  pod: V1Pod;
}

export interface PodWatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string | undefined;
}

/** Watches the namespace's pods that `opts` select; its events as they come. */
export async function watchPods(ctx: ScenarioContext, opts: PodWatchOptions) {
  const events: PodEvent[] = [];
  let ended: unknown;
  const query = Object.fromEntries(Object.entries(opts).filter(([, v]) => v));
  const abort = await new Watch(ctx.kubeConfig).watch(
    `/api/v1/namespaces/${ctx.namespace}/pods`,
    query,
    (type, pod: V1Pod) => events.push({ type, pod }),
    (err) => {
      ended = err ?? 'closed';
    },
  );
  return {
    events,
    /** The first event from index `from` on that `accept` takes, within `timeoutMs` (an assertion). */
    next: (name: string, accept: (e: PodEvent) => boolean, timeoutMs: number, from = 0) =>
      ctx.check.eventually(
        name,
        async () => {
          if (ended !== undefined) throw new Error(`the watch ended: ${String(ended)}`);
          return events.slice(from).find(accept);
        },
        (e) => e !== undefined,
        { timeoutMs, intervalMs: 200, describe: () => events.map((e) => `${e.type} ${e.pod.status?.phase}`) },
      ) as Promise<PodEvent>,
    stop: () => abort.abort(),
  };
}
