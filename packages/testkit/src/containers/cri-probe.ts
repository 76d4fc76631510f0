import http2 from 'node:http2';
import net from 'node:net';

export interface CriVersion {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/**
 * Calls runtime.v1.RuntimeService/Version over a unix socket with a hand-framed gRPC request.
 * testkit cannot depend on @kh/cri-api (that package tests with testkit), and readiness only
 * needs this one call with an empty request.
 */
export async function criVersion(socketPath: string, timeoutMs = 2_000): Promise<CriVersion> {
  const fields = decodeStrings(await criCall(socketPath, 'Version', Buffer.alloc(0), timeoutMs));
  return {
    version: fields.get(1) ?? '',
    runtimeName: fields.get(2) ?? '',
    runtimeVersion: fields.get(3) ?? '',
    runtimeApiVersion: fields.get(4) ?? '',
  };
}

/**
 * CRI UpdateRuntimeConfig with `runtime_config.network_config.pod_cidr`: what a kubelet sends
 * once its Node has a pod CIDR, and what makes a runtime with a CNI conf template write its
 * network config.
 */
export async function criUpdatePodCidr(
  socketPath: string,
  podCidr: string,
  timeoutMs = 5_000,
): Promise<void> {
  // UpdateRuntimeConfigRequest{1: RuntimeConfig{1: NetworkConfig{1: pod_cidr}}}
  const field1 = (body: Buffer) => Buffer.concat([Buffer.from([0x0a]), varint(body.length), body]);
  const request = field1(field1(field1(Buffer.from(podCidr, 'utf8'))));
  await criCall(socketPath, 'UpdateRuntimeConfig', request, timeoutMs);
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** One unary RuntimeService call; resolves with the response message's bytes. */
function criCall(socketPath: string, method: string, message: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(socketPath) });
    const timer = setTimeout(
      () => fail(new Error(`CRI ${method} on ${socketPath} timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
    const fail = (err: Error) => {
      clearTimeout(timer);
      session.destroy();
      reject(err);
    };
    session.on('error', fail);
    const req = session.request({
      ':method': 'POST',
      ':path': `/runtime.v1.RuntimeService/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let statusMessage = '';
    const readStatus = (headers: http2.IncomingHttpHeaders) => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
      if (headers['grpc-message'] !== undefined)
        statusMessage = decodeURIComponent(String(headers['grpc-message']));
    };
    req.on('response', readStatus);
    req.on('trailers', readStatus);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', fail);
    req.on('end', () => {
      clearTimeout(timer);
      session.close();
      if (status !== '0')
        return reject(new Error(`CRI ${method} on ${socketPath}: grpc-status ${status} ${statusMessage}`));
      // 5-byte gRPC frame header (compressed flag + length), then the response message.
      resolve(Buffer.concat(chunks).subarray(5));
    });
    // Uncompressed flag, big-endian length, the message.
    const header = Buffer.alloc(5);
    header.writeUInt32BE(message.length, 1);
    req.end(Buffer.concat([header, message]));
  });
}

/** Decodes the length-delimited fields of a flat protobuf message as UTF-8 strings by field number. */
function decodeStrings(buf: Buffer): Map<number, string> {
  const fields = new Map<number, string>();
  let pos = 0;
  const varint = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = buf[pos++];
      if (byte === undefined) throw new Error('truncated protobuf message');
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return result;
      shift += 7;
    }
  };
  while (pos < buf.length) {
    const key = varint();
    const wireType = key & 7;
    if (wireType === 2) {
      const length = varint();
      fields.set(Math.floor(key / 8), buf.toString('utf8', pos, pos + length));
      pos += length;
    } else if (wireType === 0) varint();
    else throw new Error(`unexpected protobuf wire type ${wireType} in VersionResponse`);
  }
  return fields;
}
