// libcni's result cache: after a successful ADD of a network list, one file per attachment,
// `<cacheDir>/results/<network>-<containerID>-<ifname>`, holds the config, the CNI_ARGS and
// capability args used and the result. DEL reads it (the prevResult, the config as it was), so a
// restarted runtime can tear down what an earlier one set up; the runtime reads pod IPs from it.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject } from './config.js';

/** libcni's CNICacheV1. */
const CACHE_KIND = 'cniCacheV1';

export interface CachedAttachment {
  containerId: string;
  networkName: string;
  ifName: string;
  /** The network list's JSON at ADD. */
  config: string;
  netns: string;
  cniArgs: [string, string][];
  capabilityArgs: JsonObject;
  result: JsonObject;
}

/** The file layout libcni writes (its `config` is base64, as Go marshals []byte). */
interface CacheFile {
  kind: string;
  containerId: string;
  config: string;
  ifName: string;
  networkName: string;
  netns?: string;
  cniArgs?: [string, string][];
  capabilityArgs?: JsonObject;
  result?: JsonObject;
}

export class ResultCache {
  constructor(readonly dir: string) {}

  private get resultsDir(): string {
    return join(this.dir, 'results');
  }

  private file(networkName: string, containerId: string, ifName: string): string {
    return join(this.resultsDir, `${networkName}-${containerId}-${ifName}`);
  }

  async put(a: CachedAttachment): Promise<void> {
    const body: CacheFile = {
      kind: CACHE_KIND,
      containerId: a.containerId,
      config: Buffer.from(a.config, 'utf8').toString('base64'),
      ifName: a.ifName,
      networkName: a.networkName,
      ...(a.netns ? { netns: a.netns } : {}),
      cniArgs: a.cniArgs,
      capabilityArgs: a.capabilityArgs,
      result: a.result,
    };
    await mkdir(this.resultsDir, { recursive: true, mode: 0o700 });
    const path = this.file(a.networkName, a.containerId, a.ifName);
    // Readers never see half a file: write aside, then rename over.
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, JSON.stringify(body), { mode: 0o600 });
    await rename(tmp, path);
  }

  async delete(a: Pick<CachedAttachment, 'networkName' | 'containerId' | 'ifName'>): Promise<void> {
    await rm(this.file(a.networkName, a.containerId, a.ifName), { force: true });
  }

  /** libcni's GetCachedAttachments(containerID): every attachment cached for one container. */
  async attachments(containerId: string): Promise<CachedAttachment[]> {
    const names = await readdir(this.resultsDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    const part = `-${containerId}-`;
    const found: CachedAttachment[] = [];
    for (const name of names.sort()) {
      const pos = name.indexOf(part);
      if (pos <= 0 || pos + part.length >= name.length || name.includes('.tmp-')) continue;
      const text = await readFile(join(this.resultsDir, name), 'utf8').catch(() => undefined);
      const a = text === undefined ? undefined : decode(text);
      if (a?.containerId === containerId) found.push(a);
    }
    return found;
  }
}

function decode(text: string): CachedAttachment | undefined {
  let f: CacheFile;
  try {
    f = JSON.parse(text) as CacheFile;
  } catch {
    return undefined;
  }
  if (f.kind !== CACHE_KIND || !f.ifName || !f.networkName || typeof f.config !== 'string') return undefined;
  return {
    containerId: f.containerId,
    networkName: f.networkName,
    ifName: f.ifName,
    config: Buffer.from(f.config, 'base64').toString('utf8'),
    netns: f.netns ?? '',
    cniArgs: f.cniArgs ?? [],
    capabilityArgs: f.capabilityArgs ?? {},
    result: f.result ?? {},
  };
}

/** The addresses (without prefix length) of a CNI result of any version, in its order. */
export function resultIps(result: JsonObject): string[] {
  const strip = (cidr: unknown) => (typeof cidr === 'string' ? (cidr.split('/')[0] ?? '') : '');
  // 0.3.0 and later: ips[].address; 0.1.0/0.2.0: ip4.ip and ip6.ip.
  if (Array.isArray(result.ips))
    return result.ips.map((ip) => strip((ip as { address?: unknown }).address)).filter((a) => a !== '');
  return [result.ip4, result.ip6]
    .map((ip) => strip((ip as { ip?: unknown } | undefined)?.ip))
    .filter((a) => a !== '');
}
