// imagePullSecrets -> CRI AuthConfig. Secrets of type kubernetes.io/dockerconfigjson (and the
// older kubernetes.io/dockercfg) form a keyring; an image gets every entry whose registry
// matches its host and whose path is a prefix of its repository, most specific first.

import { createHash } from 'node:crypto';
import { DockerHubDomain, parseImageReference } from '@kh/apimachinery';
import type { V1Secret } from '@kubernetes/client-node';
import type { SecretCoordinates } from './pullmanager/records.js';

/** Same fields as the CRI AuthConfig message. */
export interface RegistryAuth {
  username: string;
  password: string;
  auth: string;
  serverAddress: string;
  identityToken: string;
  registryToken: string;
}

/** A credential with where it came from and a hash of it, so records can match equal credentials. */
export interface TrackedAuth {
  auth: RegistryAuth;
  source: SecretCoordinates;
  credentialHash: string;
}

interface KeyringEntry extends TrackedAuth {
  /** Host pattern, may hold "*" labels; "index.docker.io" for Docker Hub. */
  host: string;
  path: string;
}

/** sha256 of every AuthConfig field: equal credentials in different secrets hash alike. */
function credentialHash(a: RegistryAuth): string {
  const fields = [a.username, a.password, a.auth, a.serverAddress, a.identityToken, a.registryToken];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}

export interface Keyring {
  entries: KeyringEntry[];
  /** Secrets that could not be used, with why (they are skipped, not fatal). */
  problems: string[];
}

const DockerHubKeyHost = 'index.docker.io';

function secretValue(secret: V1Secret, key: string): string | undefined {
  const b64 = secret.data?.[key];
  if (b64 !== undefined) return Buffer.from(b64, 'base64').toString('utf8');
  return secret.stringData?.[key];
}

function splitKey(key: string): { host: string; path: string } {
  let k = key.trim();
  k = k.replace(/^[a-z]+:\/\//i, '');
  const slash = k.indexOf('/');
  let host = slash < 0 ? k : k.slice(0, slash);
  // Docker's own config names Docker Hub with a /v1/ path; it is not a repository prefix.
  let path = slash < 0 ? '' : k.slice(slash + 1).replace(/\/+$/, '');
  if (/^v[12]$/.test(path)) path = '';
  host = host.toLowerCase();
  if (host === DockerHubDomain || host === 'registry-1.docker.io') host = DockerHubKeyHost;
  return { host, path };
}

interface DockerConfigEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
}

function toAuth(serverAddress: string, e: DockerConfigEntry): RegistryAuth {
  let username = e.username ?? '';
  let password = e.password ?? '';
  if (e.auth) {
    const decoded = Buffer.from(e.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Error(`"auth" of ${serverAddress} is not base64("user:password")`);
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  return {
    username,
    password,
    auth: e.auth ?? '',
    serverAddress,
    identityToken: e.identitytoken ?? '',
    registryToken: e.registrytoken ?? '',
  };
}

export function buildKeyring(secrets: V1Secret[]): Keyring {
  const keyring: Keyring = { entries: [], problems: [] };
  for (const s of secrets) {
    const source = {
      uid: s.metadata?.uid ?? '',
      namespace: s.metadata?.namespace ?? '',
      name: s.metadata?.name ?? '',
    };
    const name = `${source.namespace}/${source.name}`;
    let auths: Record<string, DockerConfigEntry> | undefined;
    try {
      const json = secretValue(s, '.dockerconfigjson');
      const cfg = secretValue(s, '.dockercfg');
      if (json !== undefined)
        auths = (JSON.parse(json) as { auths?: Record<string, DockerConfigEntry> }).auths;
      else if (cfg !== undefined) auths = JSON.parse(cfg) as Record<string, DockerConfigEntry>;
      else {
        keyring.problems.push(`secret ${name} has neither .dockerconfigjson nor .dockercfg`);
        continue;
      }
      for (const [key, entry] of Object.entries(auths ?? {})) {
        const { host, path } = splitKey(key);
        // containerd 1.6 compares the URL host of serverAddress with the registry's and silently
        // drops credentials whose address has no scheme ("registry:5000"): always send a URL.
        const serverAddress = /^[a-z]+:\/\//i.test(key.trim()) ? key.trim() : `https://${host}`;
        const auth = toAuth(serverAddress, entry);
        keyring.entries.push({ host, path, auth, source, credentialHash: credentialHash(auth) });
      }
    } catch (err) {
      keyring.problems.push(`secret ${name}: ${(err as Error).message}`);
    }
  }
  // Most specific first: longer paths, then hosts without wildcards.
  keyring.entries.sort(
    (a, b) => b.path.length - a.path.length || Number(a.host.includes('*')) - Number(b.host.includes('*')),
  );
  return keyring;
}

function hostMatches(pattern: string, host: string): boolean {
  const [pHost, pPort = ''] = pattern.split(':');
  const [hHost, hPort = ''] = host.split(':');
  if (pPort !== hPort) return false;
  const p = (pHost ?? '').split('.');
  const h = (hHost ?? '').split('.');
  return p.length === h.length && p.every((label, i) => label === '*' || label === h[i]);
}

function pathMatches(prefix: string, path: string): boolean {
  return prefix === '' || path === prefix || path.startsWith(`${prefix}/`);
}

/** Credentials to try for `image`, in order, with their secrets; empty when the pull should go without auth. */
export function lookupTrackedAuth(keyring: Keyring, image: string): TrackedAuth[] {
  const ref = parseImageReference(image);
  const host = ref.domain === DockerHubDomain ? DockerHubKeyHost : ref.domain.toLowerCase();
  return keyring.entries
    .filter((e) => hostMatches(e.host, host) && pathMatches(e.path, ref.path))
    .map(({ auth, source, credentialHash }) => ({ auth, source, credentialHash }));
}

/** Credentials to try for `image`, in order; empty when the pull should go without auth. */
export function lookupAuth(keyring: Keyring, image: string): RegistryAuth[] {
  return lookupTrackedAuth(keyring, image).map((t) => t.auth);
}
