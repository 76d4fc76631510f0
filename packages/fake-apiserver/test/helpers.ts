import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiServer, type ApiServerOptions, createApiServer, type UserInfo } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';

export const KUBECTL = {
  oldest: '/usr/lib/google-cloud-sdk/bin/kubectl.1.27',
  newest: '/usr/lib/google-cloud-sdk/bin/kubectl.1.33',
};

export const TOKEN = 'test-token-1234';

export interface Harness {
  server: ApiServer;
  dir: string;
  kubeconfigPath: string;
  api: ApiClient;
  stop(): Promise<void>;
}

/** Starts a server with TLS and a token, and writes its kubeconfig to a temp dir. */
export async function startHarness(opts: ApiServerOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-'));
  const server = await createApiServer({ tls: true, tokens: { [TOKEN]: 'admin' }, ...opts });
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigPath, server.kubeconfig());
  return {
    server,
    dir,
    kubeconfigPath,
    api: new ApiClient(server.url, { token: TOKEN, ca: server.caPem }),
    async stop() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  body: KObject;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A tiny JSON client over node:http(s) so tests see raw status codes and headers. */
export class ApiClient {
  constructor(
    readonly base: string,
    readonly opts: { token?: string; ca?: string } = {},
  ) {}

  request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    const url = new URL(path, this.base);
    const payload =
      body === undefined
        ? undefined
        : typeof body === 'string' || Buffer.isBuffer(body)
          ? body
          : JSON.stringify(body);
    const h: Record<string, string> = { Accept: 'application/json', ...headers };
    if (payload !== undefined) {
      h['Content-Type'] ??= 'application/json';
      // Node's client sends DELETE bodies without framing unless told the length.
      h['Content-Length'] = String(Buffer.byteLength(payload));
    }
    if (this.opts.token) h.Authorization = `Bearer ${this.opts.token}`;
    const doRequest = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = doRequest(url, { method, headers: h, ca: this.opts.ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: KObject = {};
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON (health endpoints, watch streams)
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers, text });
        });
      });
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  get = (path: string, headers?: Record<string, string>) => this.request('GET', path, undefined, headers);
  post = (path: string, body: unknown, headers?: Record<string, string>) =>
    this.request('POST', path, body, headers);
  put = (path: string, body: unknown) => this.request('PUT', path, body);
  delete = (path: string, body?: unknown) => this.request('DELETE', path, body);
  patch = (path: string, type: 'json' | 'merge' | 'strategic', body: unknown) =>
    this.request('PATCH', path, body, {
      'Content-Type':
        type === 'json'
          ? 'application/json-patch+json'
          : type === 'merge'
            ? 'application/merge-patch+json'
            : 'application/strategic-merge-patch+json',
    });

  /** Opens a watch and collects parsed events until `until` says stop (or the stream ends). */
  watch(path: string, until: (events: KObject[]) => boolean, timeoutMs = 15_000): Promise<KObject[]> {
    const url = new URL(path, this.base);
    const h: Record<string, string> = { Accept: 'application/json' };
    if (this.opts.token) h.Authorization = `Bearer ${this.opts.token}`;
    const doRequest = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const events: KObject[] = [];
      let buf = '';
      const timer = setTimeout(() => {
        req.destroy();
        reject(
          new Error(
            `watch ${path}: condition not met within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.type))}`,
          ),
        );
      }, timeoutMs);
      const req = doRequest(url, { method: 'GET', headers: h, ca: this.opts.ca }, (res) => {
        res.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          let nl = buf.indexOf('\n');
          while (nl >= 0) {
            events.push(JSON.parse(buf.slice(0, nl)));
            buf = buf.slice(nl + 1);
            nl = buf.indexOf('\n');
          }
          if (until(events)) {
            clearTimeout(timer);
            req.destroy();
            resolve(events);
          }
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve(events);
        });
      });
      req.on('error', (e) => {
        if (!req.destroyed) reject(e);
      });
      req.end();
    });
  }
}

export function kubectl(
  bin: string,
  kubeconfig: string,
  args: string[],
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, ['--kubeconfig', kubeconfig, ...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err
        ? (((err as NodeJS.ErrnoException & { code?: number }).code as unknown as number) ?? 1)
        : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

/** Spawns a long-running kubectl (get -w) and exposes its stdout lines. */
export function spawnKubectl(bin: string, kubeconfig: string, args: string[]) {
  const child = spawn(bin, ['--kubeconfig', kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buf = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    buf += c.toString('utf8');
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  return {
    lines,
    stderr: () => stderr,
    async waitFor(pred: (lines: string[]) => boolean, timeoutMs = 15_000) {
      const start = Date.now();
      while (!pred(lines)) {
        if (Date.now() - start > timeoutMs)
          throw new Error(
            `kubectl ${args.join(' ')}: timed out; lines=${JSON.stringify(lines)} stderr=${stderr}`,
          );
        await sleep(50);
      }
    },
    kill() {
      child.kill('SIGTERM');
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<T> {
  const start = Date.now();
  let last: unknown;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      last = e;
    }
    if (Date.now() - start > timeoutMs) throw last;
    await sleep(50);
  }
}

export function readyNode(
  name: string,
  opts: {
    cpu?: string;
    memory?: string;
    pods?: string;
    labels?: Record<string, string>;
    taints?: KObject[];
  } = {},
): KObject {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(opts.labels ?? {}) } },
    spec: opts.taints ? { taints: opts.taints } : {},
    status: {
      capacity: { cpu: opts.cpu ?? '4', memory: opts.memory ?? '8Gi', pods: opts.pods ?? '110' },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        machineID: 'm',
        systemUUID: 's',
        bootID: 'b',
        kernelVersion: '6.1.0',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        containerRuntimeVersion: 'containerd://1.6.20',
        kubeletVersion: 'v1.33.0',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

export function pod(name: string, spec: KObject = {}, metadata: KObject = {}): KObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: { containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'] }], ...spec },
  };
}

export function priorityClass(name: string, value: unknown, extra: KObject = {}): KObject {
  return { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value, ...extra };
}

/** A TLS server authorizing as kubeadm's (Node,RBAC) for these token users, no controllers running. */
export function nodeRbacServer(
  users: Record<string, UserInfo>,
  opts: Parameters<typeof createApiServer>[0] = {},
): Promise<ApiServer> {
  return createApiServer({
    tls: true,
    tokens: new Map(Object.entries(users)),
    authorizationMode: ['Node', 'RBAC'],
    scheduler: false,
    nodeLifecycle: false,
    ...opts,
  });
}
