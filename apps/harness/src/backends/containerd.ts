// containerd with its built-in CRI plugin in a kind-style node container, supervised by the
// node's init so that it can be stopped and started again like a systemd unit on a real node.
import { containerdRuntime } from '@kh/testkit';
import { kindBackend } from './kind.js';

export const containerdBackend = kindBackend({
  name: 'containerd',
  description: 'containerd 1.6 (CRI plugin) in a kind-style node container',
  capabilities: ['real-containers', 'memory-pressure', 'registry-pull', 'runtime-restart'],
  runtime: containerdRuntime(),
});
