// remotecommand over SPDY/3.1 (what client-go's SPDY executor speaks): the handshake, then the
// client opens one stream per requested channel, typed by its `streamtype` header.
import type { Socket } from 'node:net';
import { headerValue, RstStatus } from '../spdy/frames.js';
import { SpdySession, type SpdyStream } from '../spdy/session.js';
import { endWritable } from '../util/streams.js';
import { refuseUpgrade } from './http_reply.js';
import {
  ACCEPTED_PROTOCOLS_HEADER,
  headerList,
  negotiate,
  PROTOCOL_HEADER,
  REMOTE_COMMAND_SPDY_PROTOCOLS,
} from './negotiate.js';
import {
  type CommandSession,
  encodeStatus,
  type RemoteCommandOptions,
  type RemoteCommandStreams,
} from './remotecommand_session.js';
import { decodeResizeEvents } from './resize.js';
import type { UpgradeRequest } from './session_options.js';
import { failureStatus } from './status.js';

/**
 * Negotiates the protocol, switches the connection to SPDY and waits for the client's streams.
 * Resolves undefined when the request was refused or the streams did not come in time (the
 * connection is then closed).
 */
export async function acceptSpdyRemoteCommand(
  { req, socket, head }: UpgradeRequest,
  wanted: RemoteCommandStreams,
  options: RemoteCommandOptions,
): Promise<CommandSession | undefined> {
  const protocol = spdyHandshake(
    req.headers[PROTOCOL_HEADER.toLowerCase()],
    REMOTE_COMMAND_SPDY_PROTOCOLS,
    socket,
  );
  if (!protocol) return undefined;
  (socket as Socket).setNoDelay?.(true);

  // Resizing arrived with v3; the error stream is always there.
  const expected = new Set(['error']);
  if (wanted.stdin) expected.add('stdin');
  if (wanted.stdout) expected.add('stdout');
  if (wanted.stderr) expected.add('stderr');
  if (wanted.tty && protocol !== 'v2.channel.k8s.io' && protocol !== 'channel.k8s.io') expected.add('resize');

  const streams = new Map<string, SpdyStream>();
  let allThere!: () => void;
  const ready = new Promise<void>((resolve) => {
    allThere = resolve;
  });
  const session = new SpdySession(socket, {
    role: 'server',
    head,
    idleTimeoutMs: options.idleTimeoutMs,
    onError: options.onError,
    onStream: (stream) => {
      const type = headerValue(stream.headers, 'streamtype') ?? '';
      if (!expected.has(type) || streams.has(type)) {
        options.onError?.(new Error(`refused SPDY stream ${stream.id}: unexpected stream type "${type}"`));
        stream.reset(RstStatus.REFUSED_STREAM);
        return;
      }
      streams.set(type, stream);
      void stream.reply();
      if (streams.size === expected.size) allThere();
    },
  });
  options.signal?.addEventListener('abort', () => session.destroy(), { once: true, signal: session.signal });

  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    ready.then(() => 'ready' as const),
    session.closed.then(() => 'closed' as const),
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.creationTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    if (outcome === 'timeout') {
      options.onError?.(
        new Error(`timed out after ${options.creationTimeoutMs} ms waiting for the client to create streams`),
      );
    }
    await session.end();
    return undefined;
  }

  const errorStream = streams.get('error')!;
  const stdout = streams.get('stdout');
  const stderr = streams.get('stderr');
  const resize = streams.get('resize');
  return {
    io: {
      tty: wanted.tty,
      stdin: streams.get('stdin'),
      stdout,
      stderr,
      resize: resize ? decodeResizeEvents(resize) : undefined,
    },
    signal: session.signal,
    async finish(status) {
      await Promise.all([stdout, stderr].map((w) => w && endWritable(w, session.signal)));
      const text = encodeStatus(status, protocol);
      if (text.length > 0) errorStream.write(text);
      await endWritable(errorStream, session.signal);
      await session.end();
    },
  };
}

/**
 * apimachinery's httpstream.Handshake plus the 101 answer: picks the client's first protocol this
 * side speaks. Answers 400 when the client named none, 403 (listing ours) when none matches.
 */
export function spdyHandshake(
  offeredHeader: string | string[] | undefined,
  supported: readonly string[],
  socket: UpgradeRequest['socket'],
): string | undefined {
  const offered = headerList(offeredHeader);
  const ours = supported.join(', ');
  if (offered.length === 0) {
    refuseUpgrade(
      socket,
      failureStatus(
        400,
        'BadRequest',
        `unable to upgrade: ${PROTOCOL_HEADER} is required (this server speaks ${ours})`,
      ),
    );
    return undefined;
  }
  const protocol = negotiate(offered, supported);
  if (!protocol) {
    refuseUpgrade(
      socket,
      failureStatus(
        403,
        'Forbidden',
        `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
      ),
      { [ACCEPTED_PROTOCOLS_HEADER]: [...supported] },
    );
    return undefined;
  }
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${PROTOCOL_HEADER}: ${protocol}\r\n\r\n`,
  );
  return protocol;
}
