import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer, type UserInfo } from '../src/index.js';
import { ApiClient, eventually, KUBECTL, kubectl } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  'admin-token': { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  'dev-token': { name: 'dev', uid: 'u-dev', groups: [] },
};
const CLUSTERROLES = '/apis/rbac.authorization.k8s.io/v1/clusterroles';
const LABEL = 'rbac.example.com/aggregate-to-monitoring';

describe('aggregated ClusterRoles', () => {
  let s: ApiServer;
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-aggregation-'));
  const admin = () => new ApiClient(s.url, { token: 'admin-token', ca: s.caPem });

  beforeAll(async () => {
    s = await createApiServer({
      tls: true,
      tokens: new Map(Object.entries(USERS)),
      authorizationMode: 'RBAC',
      scheduler: false,
      nodeLifecycle: false,
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives an aggregating ClusterRole the rules of the roles its selectors match, as they come and go', async () => {
    const dev = join(dir, 'dev.kubeconfig');
    writeFileSync(dev, s.kubeconfig({ token: 'dev-token' }));
    const adminConfig = join(dir, 'admin.kubeconfig');
    writeFileSync(adminConfig, s.kubeconfig({ token: 'admin-token' }));
    const run = (config: string, ...args: string[]) => kubectl(KUBECTL.newest, config, args);
    // kubectl 1.33 sends it as protobuf.
    expect(
      (await run(adminConfig, 'create', 'clusterrole', 'monitoring', `--aggregation-rule=${LABEL}=true`))
        .stderr,
    ).toBe('');
    expect(
      (
        await run(
          adminConfig,
          'create',
          'clusterrolebinding',
          'dev-monitoring',
          '--clusterrole=monitoring',
          '--user=dev',
        )
      ).stderr,
    ).toBe('');
    const can = async (...args: string[]) => (await run(dev, 'auth', 'can-i', ...args)).stdout.trim();
    expect(await can('list', 'pods')).toBe('no');

    const piece = (name: string, labels: Record<string, string>, resource: string) =>
      admin().post(CLUSTERROLES, {
        metadata: { name, labels },
        rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: [resource] }],
      });
    expect((await piece('monitoring-pods', { [LABEL]: 'true' }, 'pods')).status).toBe(201);
    expect((await piece('monitoring-nodes', { [LABEL]: 'true' }, 'nodes')).status).toBe(201);
    expect((await piece('unrelated', { other: 'true' }, 'secrets')).status).toBe(201);
    const rules = async () => (await admin().get(`${CLUSTERROLES}/monitoring`)).body.rules ?? [];
    await eventually(async () =>
      expect((await rules()).map((r: { resources: string[] }) => r.resources[0])).toEqual(['nodes', 'pods']),
    );
    expect(await can('list', 'pods')).toBe('yes');
    expect(await can('get', 'nodes')).toBe('yes');
    expect(await can('get', 'secrets')).toBe('no');

    // A role that stops matching takes its rules along.
    expect(
      (
        await admin().patch(`${CLUSTERROLES}/monitoring-pods`, 'merge', {
          metadata: { labels: { [LABEL]: null } },
        })
      ).status,
    ).toBe(200);
    await eventually(async () => expect((await rules()).length).toBe(1));
    expect(await can('list', 'pods')).toBe('no');
    expect((await admin().delete(`${CLUSTERROLES}/monitoring-nodes`)).status).toBe(200);
    await eventually(async () => expect(await rules()).toEqual([]));
    expect(await can('get', 'nodes')).toBe('no');
  });
});
