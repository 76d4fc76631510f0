import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

export const KUBECTL = '/usr/lib/google-cloud-sdk/bin/kubectl.1.33';

export async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
  return (await promisify(execFile)(KUBECTL, ['--kubeconfig', kubeconfig, ...args])).stdout;
}

/** `kubectl wait` gives up at once on a Node that does not exist yet, so retry until it does (about 20 s). */
export async function waitForNodeReady(kubeconfig: string, node: string): Promise<string> {
  for (let i = 0; i < 40; i++) {
    const out = await kubectl(
      kubeconfig,
      'wait',
      '--for=condition=Ready',
      `node/${node}`,
      '--timeout=5s',
    ).catch(() => '');
    if (out) return out;
    await new Promise((r) => setTimeout(r, 100));
  }
  return '';
}
