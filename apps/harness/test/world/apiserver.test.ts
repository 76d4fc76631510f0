import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { retargetKubeconfig, tokenFile } from '../../src/world/apiserver.js';

describe('apiserver helpers', () => {
  it('writes kube-apiserver static token lines with quoted groups', () => {
    expect(
      tokenFile([
        { token: 't1', name: 'kubelet-harness', groups: ['system:masters'] },
        { token: 't2', name: 'system:node:n1', groups: ['system:nodes', 'x'] },
      ]),
    ).toBe(
      't1,kubelet-harness,kubelet-harness,"system:masters"\nt2,system:node:n1,system:node:n1,"system:nodes,x"\n',
    );
  });

  it('points a kubeconfig at another server and token, keeping the CA', () => {
    const src = new KubeConfig();
    src.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://apiserver:6443', caData: 'Q0E=' }],
      users: [{ name: 'u', token: 'old' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const kc = retargetKubeconfig(src.exportConfig(), 'https://127.0.0.1:1234', 'new');
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://127.0.0.1:1234', caData: 'Q0E=' });
    expect(kc.getCurrentUser()?.token).toBe('new');
  });
});
