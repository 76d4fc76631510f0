import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:https';
import type { KObject } from '../meta/object.js';
import { ApiError, badRequest, notFound } from '../meta/status.js';
import type { Store } from '../storage/store.js';

const PASSED_PARAMS = [
  'follow',
  'previous',
  'timestamps',
  'tailLines',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
];

/**
 * pods/log: proxied to the kubelet's /containerLogs on the node (its InternalIP and the port in
 * status.daemonEndpoints). When the node advertises no kubelet endpoint, the answer says so.
 */
export class Logs {
  constructor(private readonly store: Store) {}

  serve(req: IncomingMessage, res: ServerResponse, ns: string, name: string, q: URLSearchParams): void {
    const pod = this.store.get('pods', ns, name);
    if (pod === undefined) throw notFound({ group: '', resource: 'pods' }, name);
    const containers: string[] = (pod.spec?.containers ?? []).map((c: KObject) => c.name);
    let container = q.get('container');
    if (!container) {
      if (containers.length !== 1) {
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`,
        );
      }
      container = containers[0]!;
    }
    if (
      ![...containers, ...(pod.spec?.initContainers ?? []).map((c: KObject) => c.name)].includes(container)
    ) {
      throw badRequest(`container ${container} is not valid for pod ${name}`);
    }
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) throw badRequest(`pod ${name} does not have a host assigned`);
    const node = this.store.get('nodes', '', nodeName);
    const port = node?.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    const ip = (node?.status?.addresses ?? []).find((a: KObject) => a.type === 'InternalIP')?.address;
    if (!port || !ip) {
      throw new ApiError(
        503,
        'ServiceUnavailable',
        `pod logs are not available: node "${nodeName}" advertises no kubelet endpoint (status.daemonEndpoints.kubeletEndpoint.Port and an InternalIP address)`,
      );
    }
    const params = new URLSearchParams();
    for (const p of PASSED_PARAMS) {
      const v = q.get(p);
      if (v !== null) params.set(p, v);
    }
    const host = ip.includes(':') ? `[${ip}]` : ip;
    const upstream = request(
      `https://${host}:${port}/containerLogs/${ns}/${name}/${container}?${params}`,
      // The kubelet serves a self-signed certificate; the apiserver's kubelet client is configured
      // without a CA by default too.
      { rejectUnauthorized: false, timeout: 10_000 },
      (up) => {
        res.writeHead(up.statusCode ?? 502, { 'Content-Type': up.headers['content-type'] ?? 'text/plain' });
        up.pipe(res);
      },
    );
    upstream.on('error', (e) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const err = new ApiError(
        500,
        'InternalError',
        `Get "https://${host}:${port}/containerLogs/${ns}/${name}/${container}": ${e.message}`,
      );
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(err.toStatus()));
    });
    req.on('close', () => upstream.destroy());
    upstream.end();
  }
}
