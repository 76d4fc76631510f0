// Machine facts for node status, read the way cAdvisor and the kubelet read them. Every path is
// resolved under `hostRoot` so tests can point the reader at a fake /proc and /sys.
import { readFile, statfs } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { ResourceList } from '../config/resolve.js';
import { Quantity } from '../util/quantity.js';

export interface MachineInfo {
  numCores: number;
  /** MemTotal, lowered to the agent's memory cgroup limit when one is set (a node in a container). */
  memoryCapacityBytes: bigint;
  /** Size of the filesystem holding the root dir (ephemeral-storage capacity). */
  rootfsCapacityBytes: bigint;
  rootfsInodes: bigint;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  operatingSystem: string;
  architecture: string;
}

/** The machine's capacity as node status reports it (cAdvisor's, plus the root filesystem). */
export function machineCapacity(m: MachineInfo): ResourceList {
  return {
    cpu: Quantity.fromValue(m.numCores, 'DecimalSI'),
    memory: Quantity.fromValue(m.memoryCapacityBytes, 'BinarySI'),
    'ephemeral-storage': Quantity.fromValue(m.rootfsCapacityBytes, 'BinarySI'),
  };
}

export interface MachineInfoOptions {
  rootDir: string;
  hostRoot?: string;
  /** Injected for tests; default os.availableParallelism(). */
  numCores?: number;
  kernelVersion?: string;
  architecture?: string;
}

// Go's GOARCH names, which Kubernetes uses in kubernetes.io/arch and nodeInfo.architecture.
const GOARCH: Record<string, string> = {
  x64: 'amd64',
  ia32: '386',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

export function goArch(nodeArch: string = process.arch): string {
  return GOARCH[nodeArch] ?? nodeArch;
}

// cgroup v1 reports "no limit" as a page-rounded max int64.
const NO_LIMIT_V1 = 1n << 62n;

export async function readMachineInfo(opts: MachineInfoOptions): Promise<MachineInfo> {
  const root = opts.hostRoot ?? '/';
  const read = async (p: string) => {
    try {
      return (await readFile(join(root, p), 'utf8')).trim();
    } catch {
      return undefined;
    }
  };
  const meminfo = (await read('/proc/meminfo')) ?? '';
  const memTotalKb = /^MemTotal:\s+(\d+)\s+kB/m.exec(meminfo)?.[1];
  let memory = memTotalKb ? BigInt(memTotalKb) * 1024n : BigInt(os.totalmem());
  const limit = await cgroupMemoryLimit(read);
  if (limit !== undefined && limit < memory) memory = limit;

  const fs = await statfs(opts.rootDir, { bigint: true });
  const osRelease = (await read('/etc/os-release')) ?? '';
  const prettyName = /^PRETTY_NAME=("?)(.*)\1$/m.exec(osRelease)?.[2];

  return {
    numCores: opts.numCores ?? os.availableParallelism(),
    memoryCapacityBytes: memory,
    rootfsCapacityBytes: fs.blocks * fs.bsize,
    rootfsInodes: fs.files,
    machineID: (await read('/etc/machine-id')) ?? (await read('/var/lib/dbus/machine-id')) ?? '',
    // product_uuid is root-only on most hosts; the kubelet reports it empty when unreadable.
    systemUUID: ((await read('/sys/class/dmi/id/product_uuid')) ?? '').toLowerCase(),
    bootID: (await read('/proc/sys/kernel/random/boot_id')) ?? '',
    kernelVersion: opts.kernelVersion ?? os.release(),
    osImage: prettyName ?? 'Linux',
    operatingSystem: 'linux',
    architecture: opts.architecture ?? goArch(),
  };
}

/**
 * The memory cgroup this process runs in (v1 or v2), as seen under /sys/fs/cgroup: in a node
 * container it bounds the pods too, so eviction reads the node's memory from it. Falls back to
 * the hierarchy's root when the process's own path is not visible (a private cgroup namespace).
 */
export async function memoryCgroupDir(
  read: (p: string) => Promise<string | undefined> = readOrUndefined,
): Promise<{ dir: string; version: 1 | 2 } | undefined> {
  const self = (await read('/proc/self/cgroup')) ?? '';
  const v1 = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/m.exec(self)?.[1];
  const v2 = /^0::(.*)$/m.exec(self)?.[1];
  const [root, own, file, version] =
    v1 !== undefined
      ? ['/sys/fs/cgroup/memory', v1, 'memory.limit_in_bytes', 1 as const]
      : v2 !== undefined
        ? ['/sys/fs/cgroup', v2, 'memory.max', 2 as const]
        : [];
  if (!root || own === undefined || !file || !version) return undefined;
  for (const dir of [join(root, own), root]) {
    if ((await read(join(dir, file))) !== undefined) return { dir, version };
  }
  return undefined;
}

async function readOrUndefined(p: string): Promise<string | undefined> {
  try {
    return (await readFile(p, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** The memory limit of the cgroup this process runs in, when one is set. */
async function cgroupMemoryLimit(
  read: (p: string) => Promise<string | undefined>,
): Promise<bigint | undefined> {
  const cg = await memoryCgroupDir(read);
  if (!cg) return undefined;
  const text = await read(join(cg.dir, cg.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'));
  if (text === undefined || text === 'max' || !/^\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= NO_LIMIT_V1 ? undefined : n;
}
