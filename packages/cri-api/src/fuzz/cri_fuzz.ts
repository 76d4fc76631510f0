// Hostile CRI requests for the fuzz suites of every CRI server (the fake runtime here, the
// dockershim against real dockerd): raw gRPC messages that are not protobuf, protobuf whose fields
// have the wrong wire types, and well-formed requests with hostile values (huge strings, unknown
// ids, invalid names, labels and image references, negative and huge timeouts). The generators
// take the caller's fast-check, a test-only dependency, so this module imports only its types.
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type * as FastCheck from 'fast-check';
import { type CriMethodInfo, criMethods } from '../api/methods.js';

/** fast-check as `import fc from 'fast-check'` or `import * as fc` gives it. */
type Fc = Omit<typeof FastCheck, 'default'>;
type Arbitrary<T> = FastCheck.Arbitrary<T>;

export interface CriFuzzCase {
  /** garbage: random bytes; wire: wrong field types; hostile: a valid message with hostile values. */
  kind: 'garbage' | 'wire' | 'hostile';
  method: CriMethodInfo;
  payload: Uint8Array;
}

export interface CriFuzzOptions {
  /**
   * Labels every created object carries, so a leak can be found and removed (kh.run of the test).
   */
  labels: Record<string, string>;
  /**
   * The server works on a real engine shared with other processes (the dockershim on the host's
   * dockerd): its pulls may reach registries, and the engine resolves a short hex id by prefix
   * to somebody else's object. Then raw bytes go only to methods that change nothing, PullImage
   * and RemoveImage get only invalid references, and no id is a short hex string.
   */
  sharedEngine: boolean;
}

/** Status codes that name what was wrong with a request; anything else is a server fault. */
export const PRECISE_CODES: ReadonlySet<status> = new Set([
  status.OK,
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.RESOURCE_EXHAUSTED,
  status.UNIMPLEMENTED,
]);

const UNARY = criMethods.filter((m) => !m.responseStream);
const byName = (name: string) => UNARY.find((m) => m.name === name) as CriMethodInfo;

/** Strings no server should trust: empty, huge, traversal, control bytes, not UTF-8 safe, ids of nothing. */
export function hostileString(fc: Fc): Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('', ' ', '../../etc/passwd', '/', 'a/b', 'UPPER', '-lead', 'x\u0000y', 'é', '\u{1F600}'),
    fc.constantFrom('%00', '$HOME', '$(id)', 'a'.repeat(254), 'a'.repeat(64 * 1024)),
    fc.string({ maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    // Ids of things that do not exist: full and short hex, as runtimes name containers.
    fc.stringMatching(/^[0-9a-f]{64}$/),
    fc.stringMatching(/^[0-9a-f]{12}$/),
  );
}

/** Image references no registry can be asked for: each is invalid before any lookup. */
export function invalidImageRef(fc: Fc): Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      'UPPER/case',
      'a:b:c',
      'a@sha256:zz',
      'a@',
      ':tag',
      '/abs',
      'a//b',
      'x'.repeat(300),
    ),
    fc.constantFrom('../../etc', 'a b', 'a\u0000b', 'registry:5000/../x', 'a:' + 't'.repeat(200)),
  );
}

const hostileTimeout = (fc: Fc) =>
  fc.oneof(
    fc.constantFrom(-1, -(2 ** 31), 0, 2 ** 31 - 1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
    fc.integer(),
  );

function hostileLabels(fc: Fc, base: Record<string, string>): Arbitrary<Record<string, string>> {
  const key = fc.oneof(
    hostileString(fc),
    fc.constantFrom('kubernetes.io/', '/name', 'a/b/c', 'k'.repeat(64), 'example.com/' + 'n'.repeat(70)),
  );
  return fc.dictionary(key, hostileString(fc), { maxKeys: 4 }).map((extra) => ({ ...extra, ...base }));
}

/** One well-formed request per method, its values drawn from the hostile sets above. */
function hostileRequests(fc: Fc, o: CriFuzzOptions): Arbitrary<{ method: CriMethodInfo; request: unknown }> {
  const s = hostileString(fc);
  const id = o.sharedEngine ? s.filter((v) => !/^[0-9a-f]{1,63}$/i.test(v)) : s;
  const metadata = fc.record({ name: s, uid: s, namespace: s, attempt: fc.nat() });
  const sandboxConfig = fc.record({
    metadata,
    labels: hostileLabels(fc, o.labels),
    annotations: hostileLabels(fc, {}),
    hostname: s,
  });
  const imageRef = o.sharedEngine ? invalidImageRef(fc) : fc.oneof(invalidImageRef(fc), s);
  const containerConfig = fc.record({
    metadata: fc.record({ name: s, attempt: fc.nat() }),
    image: fc.record({ image: fc.oneof(invalidImageRef(fc), s) }),
    command: fc.array(s, { maxLength: 3 }),
    labels: hostileLabels(fc, o.labels),
    logPath: s,
  });
  const req = (name: string, request: Arbitrary<object>) =>
    request.map((r) => ({ method: byName(name), request: r }));
  return fc.oneof(
    req('RunPodSandbox', fc.record({ config: sandboxConfig, runtimeHandler: s })),
    req('StopPodSandbox', fc.record({ podSandboxId: id })),
    req('RemovePodSandbox', fc.record({ podSandboxId: id })),
    req('PodSandboxStatus', fc.record({ podSandboxId: id, verbose: fc.boolean() })),
    req('PodSandboxStats', fc.record({ podSandboxId: id })),
    req('ListPodSandbox', fc.record({ filter: fc.record({ id, labelSelector: hostileLabels(fc, {}) }) })),
    req('CreateContainer', fc.record({ podSandboxId: id, config: containerConfig, sandboxConfig })),
    req('StartContainer', fc.record({ containerId: id })),
    req('StopContainer', fc.record({ containerId: id, timeout: hostileTimeout(fc) })),
    req('RemoveContainer', fc.record({ containerId: id })),
    req('ContainerStatus', fc.record({ containerId: id, verbose: fc.boolean() })),
    req('ContainerStats', fc.record({ containerId: id })),
    req(
      'ListContainers',
      fc.record({ filter: fc.record({ id, podSandboxId: id, labelSelector: hostileLabels(fc, {}) }) }),
    ),
    req(
      'UpdateContainerResources',
      fc.record({
        containerId: id,
        linux: fc.record({ cpuShares: fc.integer(), memoryLimitInBytes: hostileTimeout(fc) }),
      }),
    ),
    req('ReopenContainerLog', fc.record({ containerId: id })),
    req(
      'ExecSync',
      fc.record({ containerId: id, cmd: fc.array(s, { maxLength: 3 }), timeout: hostileTimeout(fc) }),
    ),
    req('Exec', fc.record({ containerId: id, cmd: fc.array(s, { maxLength: 3 }), stdout: fc.boolean() })),
    req('Attach', fc.record({ containerId: id, stdout: fc.boolean() })),
    req('PortForward', fc.record({ podSandboxId: id, port: fc.array(fc.integer(), { maxLength: 3 }) })),
    req('ImageStatus', fc.record({ image: fc.record({ image: imageRef }), verbose: fc.boolean() })),
    req('RemoveImage', fc.record({ image: fc.record({ image: imageRef }) })),
    req('PullImage', fc.record({ image: fc.record({ image: imageRef }), sandboxConfig })),
  );
}

/** Protobuf with arbitrary field numbers and wire types: strings where ints belong, and so on. */
function wrongWire(fc: Fc): Arbitrary<Uint8Array> {
  const varint = (n: bigint) => {
    const out: number[] = [];
    let v = BigInt.asUintN(64, n);
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v) b |= 0x80;
      out.push(b);
    } while (v);
    return out;
  };
  const field = fc.record({
    no: fc.integer({ min: 1, max: 20 }),
    wire: fc.constantFrom(0, 1, 2, 5),
    value: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
    bytes: fc.uint8Array({ maxLength: 64 }),
  });
  return fc.array(field, { minLength: 1, maxLength: 8 }).map((fields) => {
    const out: number[] = [];
    for (const f of fields) {
      out.push(...varint(BigInt((f.no << 3) | f.wire)));
      if (f.wire === 0) out.push(...varint(f.value));
      else if (f.wire === 2) out.push(...varint(BigInt(f.bytes.length)), ...f.bytes);
      else {
        const size = f.wire === 1 ? 8 : 4;
        for (let i = 0; i < size; i++)
          out.push(Number((BigInt.asUintN(64, f.value) >> BigInt(8 * i)) & 0xffn));
      }
    }
    return Uint8Array.from(out);
  });
}

/** Methods that only read (or, UpdateRuntimeConfig, set the server's own pod CIDR). */
const READ_ONLY = /^(Version|Status|RuntimeConfig|UpdateRuntimeConfig|List.*|.*Status|.*Stats|ImageFsInfo)$/;

/**
 * Any of the three kinds against any unary method, or for a shared engine raw bytes only against
 * the methods that change nothing: random bytes may decode into a valid reference or id.
 */
export function criFuzzCases(fc: Fc, o: CriFuzzOptions): Arbitrary<CriFuzzCase> {
  const rawTargets = o.sharedEngine ? UNARY.filter((m) => READ_ONLY.test(m.name)) : UNARY;
  const method = fc.constantFrom(...rawTargets);
  return fc.oneof(
    fc.record({ kind: fc.constant('garbage' as const), method, payload: fc.uint8Array({ maxLength: 512 }) }),
    fc.record({ kind: fc.constant('wire' as const), method, payload: wrongWire(fc) }),
    hostileRequests(fc, o).map(({ method, request }) => ({
      kind: 'hostile' as const,
      method,
      payload: method.requestType.encode(method.requestType.fromPartial(request as object)).finish(),
    })),
  );
}

export interface CriFuzzReply {
  code: status;
  details: string;
  /** The decoded response of an OK call (a created sandbox's or container's id is in it). */
  response?: unknown;
}

/** Sends raw request bytes to CRI servers, bypassing the client's encoding. */
export class RawCriClient {
  readonly #client: Client;

  constructor(endpoint: string) {
    // Over the server's limit on purpose: the server, not this client, must refuse big messages.
    this.#client = new Client(endpoint, credentials.createInsecure(), { 'grpc.max_send_message_length': -1 });
  }

  call(method: CriMethodInfo, payload: Uint8Array, timeoutMs = 15_000): Promise<CriFuzzReply> {
    return new Promise((resolve) => {
      this.#client.makeUnaryRequest(
        method.path,
        (b: Uint8Array) => Buffer.from(b),
        (b: Buffer) => b,
        payload,
        new Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err: ServiceError | null, res?: Buffer) => {
          if (err) resolve({ code: err.code, details: err.details });
          else resolve({ code: status.OK, details: '', response: method.responseType.decode(res as Buffer) });
        },
      );
    });
  }

  close(): void {
    this.#client.close();
  }
}

/** Tallies replies: by code, and the faults (an imprecise code, or an error without a message). */
export class CriFuzzTally {
  cases = 0;
  readonly byCode = new Map<string, number>();
  readonly faults: Array<{ kind: string; method: string; code: string; details: string }> = [];

  add(c: CriFuzzCase, r: CriFuzzReply): void {
    this.cases++;
    const code = status[r.code] ?? String(r.code);
    this.byCode.set(code, (this.byCode.get(code) ?? 0) + 1);
    if (!PRECISE_CODES.has(r.code) || (r.code !== status.OK && r.details.trim() === ''))
      this.faults.push({ kind: c.kind, method: c.method.name, code, details: r.details.slice(0, 300) });
  }

  /** The distinct faults, one line each: `garbage Version INTERNAL: details`. */
  distinctFaults(): string[] {
    return [
      ...new Set(this.faults.map((f) => `${f.kind} ${f.method} ${f.code}: ${f.details.slice(0, 120)}`)),
    ];
  }

  summary(): string {
    const codes = [...this.byCode].map(([c, n]) => `${c} ${n}`).join(', ');
    return `${this.cases} cases, ${this.faults.length} faults (${codes})`;
  }
}

export interface CriFuzzRun {
  tally: CriFuzzTally;
  /** Ids from OK RunPodSandbox and CreateContainer replies: hostile but valid requests create. */
  created: { sandboxes: string[]; containers: string[] };
}

/**
 * Sends `runs` cases, drawn with `seed`, one at a time, and tallies the replies. A case never
 * fails the property: every reply is kept, so the caller reports all faults with the counts.
 */
export async function runCriFuzz(
  fc: Fc,
  endpoint: string,
  o: CriFuzzOptions & { runs: number; seed: number },
): Promise<CriFuzzRun> {
  const raw = new RawCriClient(endpoint);
  const run: CriFuzzRun = { tally: new CriFuzzTally(), created: { sandboxes: [], containers: [] } };
  try {
    await fc.assert(
      fc.asyncProperty(criFuzzCases(fc, o), async (c) => {
        const r = await raw.call(c.method, c.payload);
        run.tally.add(c, r);
        const res = r.response as { podSandboxId?: string; containerId?: string } | undefined;
        if (c.method.name === 'RunPodSandbox' && res?.podSandboxId)
          run.created.sandboxes.push(res.podSandboxId);
        if (c.method.name === 'CreateContainer' && res?.containerId)
          run.created.containers.push(res.containerId);
      }),
      { seed: o.seed, numRuns: o.runs, endOnFailure: true },
    );
  } finally {
    raw.close();
  }
  return run;
}
