// Public surface of @kh/cri-streaming.

export type { ExecResult, StreamIO, StreamingRuntime, TerminalSize } from './runtime.js';
