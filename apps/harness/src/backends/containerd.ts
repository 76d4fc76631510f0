// containerd with its built-in CRI plugin in a kind-style node container, supervised by the
// node's init so that it can be stopped and started again like a systemd unit on a real node. One
// column per Debian release of the node image: containerd-2.1, containerd-1.7, containerd-1.6.
import { containerdRuntime } from '@kh/testkit';
import { kindBackend } from './kind.js';
import { aliasesFor, COLUMN_RELEASES, RELEASE_RUNTIMES } from './releases.js';

export const containerdBackends = COLUMN_RELEASES.map((release) => {
  const { containerd, debian } = RELEASE_RUNTIMES[release];
  return kindBackend({
    name: `containerd-${containerd}`,
    aliases: aliasesFor(release, 'containerd'),
    description: `containerd ${containerd} (CRI plugin) in a kind-style node container (Debian ${debian})`,
    capabilities: ['real-containers', 'memory-pressure', 'registry-pull', 'runtime-handler'],
    release,
    expectedVersion: containerd,
    runtime: containerdRuntime(),
  });
});
