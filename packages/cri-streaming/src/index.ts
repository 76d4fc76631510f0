// Public surface of @kh/cri-streaming.

// Clients.
export { type DialOptions, StreamingError } from './client/dial.js';
export {
  type ForwardedConnection,
  PortForwardClient,
  type PortForwardClientOptions,
  type PortForwardTransport,
} from './client/portforward.js';
export {
  type RemoteCommandClientOptions,
  type RemoteCommandResult,
  streamRemoteCommand,
} from './client/remotecommand.js';
export { BINARY_STREAM_WS_PROTOCOLS, serveBinaryStream } from './protocol/binary_stream.js';
// Protocol handlers, for other endpoints that serve the same protocols (the node agent's
// /exec, /attach, /portForward; an apiserver proxy, and its pod logs over WebSocket).
export {
  ACCEPTED_PROTOCOLS_HEADER,
  PORT_FORWARD_SPDY_PROTOCOLS,
  PORT_FORWARD_WS_PROTOCOLS,
  PROTOCOL_HEADER,
  REMOTE_COMMAND_SPDY_PROTOCOLS,
  REMOTE_COMMAND_WS_PROTOCOLS,
  upgradeKind,
} from './protocol/negotiate.js';
export { servePortForward } from './protocol/portforward.js';
export type { PortForwardHandler, PortForwardOptions } from './protocol/portforward_session.js';
export { portsFromQuery } from './protocol/portforward_ws.js';
export { serveRemoteCommand } from './protocol/remotecommand.js';
export type {
  RemoteCommandHandler,
  RemoteCommandOptions,
  RemoteCommandStreams,
} from './protocol/remotecommand_session.js';
export type { SessionOptions, UpgradeRequest } from './protocol/session_options.js';
export {
  EXIT_CODE_CAUSE,
  type KubeStatus,
  NON_ZERO_EXIT_CODE_REASON,
  statusForError,
} from './protocol/status.js';
export { DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_TTL_MS, RequestCache } from './request_cache.js';
// The runtime seam.
export type { ExecResult, StreamIO, StreamingRuntime, TerminalSize } from './runtime/streaming_runtime.js';
// The CRI streaming server.
export {
  DEFAULT_STREAM_CREATION_TIMEOUT_MS,
  DEFAULT_STREAM_IDLE_TIMEOUT_MS,
  StreamingServer,
  type StreamingServerOptions,
} from './server.js';

// SPDY/3.1 itself.
export { SPDY_DICTIONARY } from './spdy/dictionary.js';
export { GoAwayStatus, RstStatus, type SpdyHeaders } from './spdy/frames.js';
export { SpdySession, type SpdySessionOptions, SpdyStream } from './spdy/session.js';
