// The pod's /etc/hosts as the kubelet manages it (makeHostsMount): a file <podDir>/etc-hosts that
// every container gets at /etc/hosts unless it mounts something there itself, and only once the
// pod has IPs (a hostNetwork pod's are the node's). A pod on its own network gets the managed
// file (localhost, the pod's IPs with its hostname, hostAliases); a hostNetwork pod gets the
// node's /etc/hosts under a header of its own, which the runtime's copy would otherwise be.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1HostAlias, V1Pod } from '@kubernetes/client-node';
import { podHostDomain, podHostname } from './hostname.js';

export const ETC_HOSTS_PATH = '/etc/hosts';
export const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
export const MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

function hostAliasEntries(aliases: V1HostAlias[] | undefined): string {
  if (!aliases?.length) return '';
  const lines = aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`);
  return `\n# Entries added by HostAliases.\n${lines.join('')}`;
}

/** The managed file of a pod on its own network: localhost names, then each pod IP's name. */
export function managedHostsFileContent(
  podIPs: string[],
  hostname: string,
  hostDomain: string,
  aliases: V1HostAlias[] | undefined,
): string {
  const names = hostDomain ? `${hostname}.${hostDomain}\t${hostname}` : hostname;
  return [
    MANAGED_HOSTS_HEADER,
    '127.0.0.1\tlocalhost\n',
    '::1\tlocalhost ip6-localhost ip6-loopback\n',
    'fe00::0\tip6-localnet\n',
    'fe00::0\tip6-mcastprefix\n',
    'fe00::1\tip6-allnodes\n',
    'fe00::2\tip6-allrouters\n',
    ...podIPs.map((ip) => `${ip}\t${names}\n`),
    hostAliasEntries(aliases),
  ].join('');
}

export interface HostsFileOptions {
  /** The pod's directory, <podsDir>/<uid>. */
  podDir: string;
  podIPs: string[];
  clusterDomain: string;
  /** The node's hosts file, copied for hostNetwork pods. */
  nodeHostsPath?: string;
}

/** Writes the pod's hosts file (0644) and returns its path. */
export async function ensureHostsFile(pod: V1Pod, opts: HostsFileOptions): Promise<string> {
  const aliases = pod.spec?.hostAliases;
  const content = pod.spec?.hostNetwork
    ? MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK +
      (await readFile(opts.nodeHostsPath ?? ETC_HOSTS_PATH, 'utf8')) +
      hostAliasEntries(aliases)
    : managedHostsFileContent(opts.podIPs, podHostname(pod), podHostDomain(pod, opts.clusterDomain), aliases);
  await mkdir(opts.podDir, { recursive: true });
  const file = join(opts.podDir, 'etc-hosts');
  await writeFile(file, content, { mode: 0o644 });
  await chmod(file, 0o644);
  return file;
}
