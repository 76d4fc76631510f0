// Pull intents and pulled-image records on disk, under the kubelet's <root>/image_manager:
// pulling/ holds one ImagePullIntent per image being pulled, pulled/ one ImagePulledRecord per
// image id. Files are named after a hash of their key and replaced atomically, so a crash leaves
// either the old record or the new one.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The kubelet's record API group and version (kubelet.config.k8s.io/v1alpha1). */
export const RECORDS_API_VERSION = 'kubelet.config.k8s.io/v1alpha1';
/** The records directory under the kubelet's root directory. */
export const IMAGE_MANAGER_DIR = 'image_manager';
/** The subdirectories of the records directory. */
export const PULLING_DIR = 'pulling';
export const PULLED_DIR = 'pulled';

export interface ImagePullIntent {
  apiVersion: typeof RECORDS_API_VERSION;
  kind: 'ImagePullIntent';
  /** The image as the container named it (with its default tag). */
  image: string;
}

/** The secret a credential came from. */
export interface SecretCoordinates {
  uid: string;
  namespace: string;
  name: string;
}

export interface ImagePullSecret extends SecretCoordinates {
  credentialHash: string;
}

/** Who may use an image pulled under one repository name. */
export interface ImagePullCredentials {
  /** Pulled without credentials: every pod on the node may use it. */
  nodePodsAccessible?: boolean;
  kubernetesSecrets?: ImagePullSecret[];
}

export interface ImagePulledRecord {
  apiVersion: typeof RECORDS_API_VERSION;
  kind: 'ImagePulledRecord';
  lastUpdatedTime: string;
  /** The image id the runtime reported. */
  imageRef: string;
  /** Repository (no tag or digest) -> the credentials that pulled it. */
  credentialMapping: Record<string, ImagePullCredentials>;
}

const fileName = (key: string): string => `sha256-${createHash('sha256').update(key).digest('hex')}`;

export class PullRecordsStore {
  readonly #pulling: string;
  readonly #pulled: string;

  /** `dir` is <root>/image_manager; ensureDirs creates it before the first use. */
  constructor(dir: string) {
    this.#pulling = join(dir, PULLING_DIR);
    this.#pulled = join(dir, PULLED_DIR);
  }

  async ensureDirs(): Promise<void> {
    await mkdir(this.#pulling, { recursive: true, mode: 0o700 });
    await mkdir(this.#pulled, { recursive: true, mode: 0o700 });
  }

  async writeIntent(image: string): Promise<void> {
    const intent: ImagePullIntent = { apiVersion: RECORDS_API_VERSION, kind: 'ImagePullIntent', image };
    await writeAtomic(join(this.#pulling, fileName(image)), intent);
  }

  async intentExists(image: string): Promise<boolean> {
    return (
      (await readRecord<ImagePullIntent>(join(this.#pulling, fileName(image)), 'ImagePullIntent')) !==
      undefined
    );
  }

  async deleteIntent(image: string): Promise<void> {
    await rm(join(this.#pulling, fileName(image)), { force: true });
  }

  async listIntents(): Promise<ImagePullIntent[]> {
    return listRecords<ImagePullIntent>(this.#pulling, 'ImagePullIntent');
  }

  async getPulled(imageRef: string): Promise<ImagePulledRecord | undefined> {
    return readRecord<ImagePulledRecord>(join(this.#pulled, fileName(imageRef)), 'ImagePulledRecord');
  }

  async writePulled(record: ImagePulledRecord): Promise<void> {
    await writeAtomic(join(this.#pulled, fileName(record.imageRef)), record);
  }
}

async function writeAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, JSON.stringify(value), { mode: 0o600 });
  await rename(tmp, path);
}

/** undefined when absent; a record of another kind or that does not parse is an error. */
async function readRecord<T extends { kind: string }>(path: string, kind: T['kind']): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const value = JSON.parse(text) as T;
  if (value.kind !== kind)
    throw new Error(`${path}: expected a ${kind}, found kind ${JSON.stringify(value.kind)}`);
  return value;
}

async function listRecords<T extends { kind: string }>(dir: string, kind: T['kind']): Promise<T[]> {
  const out: T[] = [];
  for (const name of await readdir(dir)) {
    if (!name.startsWith('sha256-') || name.endsWith('.tmp')) continue;
    const r = await readRecord<T>(join(dir, name), kind);
    if (r) out.push(r);
  }
  return out;
}
