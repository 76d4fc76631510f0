// How the harness drives processes on a node: the seam between a backend (which owns the node
// container) and what runs on it (the agent, the CRI call log reader).
/** Where the node agent runs and how the harness drives processes there. */
export interface NodeHost {
  /** Runs a command to completion on the node (inside the node container). */
  exec(cmd: string[], opts?: { timeoutMs?: number }): Promise<{ exitCode: number; output: string }>;
  /** Starts a long-running process on the node; the handle stops it. */
  spawn(cmd: string[], opts: { name: string; env?: Record<string, string> }): Promise<NodeProcess>;
  /** Writes a file on the node (kubeconfig, KubeletConfiguration). */
  writeFile(path: string, content: string): Promise<void>;
  /**
   * CPU-seconds the kernel charged to the node so far (its container's cgroup: runtime, shim,
   * agent, pods). Absent on a host that is not a container of its own.
   */
  cpuSeconds?(): Promise<number>;
}

export interface NodeProcess {
  readonly name: string;
  /** Resolves with the exit code when the process exits. */
  readonly exited: Promise<number | null>;
  /** The last lines the process wrote, for log excerpts in the report. */
  tail(lines: number): string[];
  /** Signals the process and waits for it to exit (SIGKILL after a grace period). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}
