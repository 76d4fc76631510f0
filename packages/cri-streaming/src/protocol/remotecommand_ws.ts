// remotecommand over a WebSocket (the kubelet's channel protocols, plus v5 with its close
// signal): channels 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize.

import { endWritable } from '../util/streams.js';
import { REMOTE_COMMAND_WS_PROTOCOLS } from './negotiate.js';
import type { CommandSession, RemoteCommandOptions, RemoteCommandStreams } from './remotecommand_session.js';
import { encodeStatus } from './remotecommand_session.js';
import { decodeResizeEvents } from './resize.js';
import type { UpgradeRequest } from './session_options.js';
import { acceptServerChannels, chooseWebSocketProtocol } from './websocket_session.js';

export const STDIN_CHANNEL = 0;
export const STDOUT_CHANNEL = 1;
export const STDERR_CHANNEL = 2;
export const ERROR_CHANNEL = 3;
export const RESIZE_CHANNEL = 4;

export async function acceptWebSocketRemoteCommand(
  upgrade: UpgradeRequest,
  wanted: RemoteCommandStreams,
  options: RemoteCommandOptions,
): Promise<CommandSession | undefined> {
  const protocol = chooseWebSocketProtocol(upgrade, REMOTE_COMMAND_WS_PROTOCOLS);
  if (protocol === undefined) return undefined;
  const accepted = await acceptServerChannels(upgrade, protocol, protocol === 'v5.channel.k8s.io', options);
  if (!accepted) return undefined;
  const { channels } = accepted;

  // The kubelet's "connection is ready" signal: an empty message on the first writable channel.
  await channels.send(
    wanted.stdout ? STDOUT_CHANNEL : wanted.stderr ? STDERR_CHANNEL : ERROR_CHANNEL,
    Buffer.alloc(0),
  );

  // Resize messages of a session without a terminal are read and dropped.
  const resize = channels.stream(RESIZE_CHANNEL);
  if (!wanted.tty) resize.resume();
  const stdin = wanted.stdin ? channels.stream(STDIN_CHANNEL) : undefined;
  const stdout = wanted.stdout ? channels.stream(STDOUT_CHANNEL) : undefined;
  const stderr = wanted.stderr ? channels.stream(STDERR_CHANNEL) : undefined;
  channels.start(accepted.early);
  return {
    io: {
      tty: wanted.tty,
      stdin,
      stdout,
      stderr,
      resize: wanted.tty ? decodeResizeEvents(resize) : undefined,
    },
    signal: channels.signal,
    async finish(status) {
      await Promise.all([stdout, stderr].map((w) => w && endWritable(w, channels.signal)));
      const text = encodeStatus(status, protocol);
      if (text.length > 0) await channels.send(ERROR_CHANNEL, text);
      channels.close(1000);
      await channels.closed;
    },
  };
}
