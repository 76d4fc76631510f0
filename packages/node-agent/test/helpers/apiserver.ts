import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiServer, type ApiServerOptions, createApiServer } from '@kh/fake-apiserver';
import { KubeNodeApi, loadKubeConfig } from '../../src/api/node_api.js';

/** A fake apiserver as the agent meets a real one: HTTPS with a bearer token, written to a kubeconfig. */
export interface TestApiServer {
  readonly server: ApiServer;
  /** Path of a kubeconfig for the agent and kubectl. */
  readonly kubeconfig: string;
  /** The agent's own API client on that kubeconfig. */
  readonly api: KubeNodeApi;
  stop(): Promise<void>;
}

/**
 * Starts the fake apiserver with TLS and token auth; its scheduler and node lifecycle controller
 * are off unless `options` turns them on, so tests see only what the agent does.
 */
export async function startTestApiServer(options: ApiServerOptions = {}): Promise<TestApiServer> {
  const server = await createApiServer({
    port: 0,
    tls: true,
    tokens: { t: 'admin' },
    scheduler: false,
    nodeLifecycle: false,
    ...options,
  });
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeconfig());
  return {
    server,
    kubeconfig,
    api: new KubeNodeApi(loadKubeConfig(kubeconfig)),
    stop: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
