import { basename } from 'node:path';
import type { CaseStatus } from '../suite/runner.js';
import { type CritestSkip, skipReason } from './skips.js';

/** One critest spec's outcome on one endpoint. */
export interface SpecResult {
  /** The spec's full text: its containers' texts and its own, as ginkgo prints and matches them. */
  id: string;
  status: CaseStatus;
  durationMs: number;
  /**
   * Why it failed (excerpt of the assertion, the gRPC status, where) or was skipped; for a spec that
   * passed on a retry, each earlier attempt's failure.
   */
  message?: string;
  /** How many times it ran, when more than once (`--ginkgo.flake-attempts`): passed means flaky. */
  attempts?: number;
  /** The sandbox and container ids the spec logged (64 hex digits), to find in the runtime's log. */
  objectIds?: string[];
  /** The runtime's log lines about those ids, for a failed or flaky spec (added by whoever can read that log). */
  runtimeLog?: string[];
}

/** The parts of ginkgo v2's JSON report (`--ginkgo.json-report`) this reads. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts: string[] | null;
  LeafNodeType: string;
  LeafNodeText: string;
  State: string;
  RunTime: number;
  Failure?: GinkgoFailure;
  /** With --ginkgo.flake-attempts: how often it ran, and each failed attempt before the last. */
  NumAttempts?: number;
  AdditionalFailures?: Array<{ Failure: GinkgoFailure }> | null;
  CapturedGinkgoWriterOutput?: string;
}
interface GinkgoFailure {
  Message: string;
  Location?: { FileName: string; LineNumber: number };
  FailureNodeType?: string;
}
interface GinkgoSuiteReport {
  SuiteSucceeded: boolean;
  SpecialSuiteFailureReasons: string[] | null;
  SpecReports: GinkgoSpecReport[] | null;
}

const FAILED_STATES = new Set(['failed', 'panicked', 'interrupted', 'aborted', 'timedout']);

/**
 * The lines of a gomega failure worth reading: its first line and the gRPC status, not the dump
 * of Go structs in between; then where it failed.
 */
export function failureExcerpt(failure: GinkgoFailure): string {
  const lines = failure.Message.split('\n').map((l) => l.trim());
  const rpc = lines.filter((l) => l.startsWith('rpc error:'));
  const first = lines.find((l) => l !== '') ?? '';
  const parts = [first, ...rpc.filter((l) => l !== first)];
  if (rpc.length === 0) {
    // A plain gomega mismatch ("Expected <string>: x to be empty"): keep it whole, folded.
    parts.splice(0, parts.length, lines.filter((l) => l !== '').join(' '));
  }
  const where = failure.Location
    ? ` (${basename(failure.Location.FileName)}:${failure.Location.LineNumber})`
    : '';
  const node =
    failure.FailureNodeType && failure.FailureNodeType !== 'It' ? ` [in ${failure.FailureNodeType}]` : '';
  return `${parts.join(' | ')}${where}${node}`;
}

/**
 * Reads a critest JSON report into one result per validation spec. Specs that critest itself leaves
 * out (benchmarks) or that --focus/--skip did not select are dropped; specs on the skip list carry
 * its reason. A failed BeforeSuite/AfterSuite throws: then no spec result means anything.
 */
export function parseGinkgoReport(json: string, skips: readonly CritestSkip[]): SpecResult[] {
  const suites = JSON.parse(json) as GinkgoSuiteReport[];
  const results: SpecResult[] = [];
  for (const suite of suites) {
    for (const spec of suite.SpecReports ?? []) {
      const id = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText].filter(Boolean).join(' ');
      if (spec.LeafNodeType !== 'It') {
        if (FAILED_STATES.has(spec.State) && spec.Failure)
          throw new Error(`critest ${spec.LeafNodeType} failed: ${failureExcerpt(spec.Failure)}`);
        continue;
      }
      const durationMs = Math.round(spec.RunTime / 1e6);
      const retried = (spec.NumAttempts ?? 1) > 1 ? { attempts: spec.NumAttempts } : {};
      const ran = { ...retried, ...objectIdsOf(spec) };
      if (FAILED_STATES.has(spec.State)) {
        results.push({
          id,
          status: 'failed',
          durationMs,
          message: spec.Failure ? failureExcerpt(spec.Failure) : spec.State,
          ...ran,
        });
      } else if (spec.State === 'passed') {
        const earlier = (spec.AdditionalFailures ?? []).map((f) => earlierAttempt(f.Failure));
        results.push({
          id,
          status: 'passed',
          durationMs,
          ...(earlier.length > 0 ? { message: earlier.join(' || ') } : {}),
          ...ran,
        });
      } else {
        // Skipped: by our list (reason), by the spec itself at run time (its message), or not selected.
        const message = skipReason(id, skips) ?? (spec.Failure?.Message.trim() || undefined);
        if (message) results.push({ id, status: 'skipped', durationMs, message });
      }
    }
  }
  return results;
}

/** ginkgo's record of a failed attempt before a retry ("Failure recorded during attempt N:\n…"). */
function earlierAttempt(failure: GinkgoFailure): string {
  const [, attempt, rest] = /^Failure recorded during attempt (\d+):\n([\s\S]*)$/.exec(failure.Message) ?? [];
  return attempt === undefined
    ? failureExcerpt(failure)
    : `attempt ${attempt} failed: ${failureExcerpt({ ...failure, Message: rest ?? '' })}`;
}

const OBJECT_ID = /\b[0-9a-f]{64}\b/g;

/** The ids a spec's log and failure name: critest logs each sandbox and container it makes. */
function objectIdsOf(spec: GinkgoSpecReport): { objectIds?: string[] } {
  const text = [
    spec.CapturedGinkgoWriterOutput ?? '',
    spec.Failure?.Message ?? '',
    ...(spec.AdditionalFailures ?? []).map((f) => f.Failure.Message),
  ].join('\n');
  const ids = [...new Set(text.match(OBJECT_ID) ?? [])];
  return ids.length > 0 ? { objectIds: ids } : {};
}

/** Specs worth the runtime's log: failed ones, and passes that took a retry. */
export function troubledSpecs(specs: readonly SpecResult[]): SpecResult[] {
  return specs.filter((s) => s.status === 'failed' || (s.status === 'passed' && (s.attempts ?? 1) > 1));
}

/**
 * The lines of a runtime's log that name one of a spec's ids (dockerd and containerd log the full
 * id), at most `max` of them, the last ones: what the runtime did with the spec's objects.
 */
export function runtimeLogLines(log: string, ids: readonly string[], max = 8): string[] {
  if (ids.length === 0) return [];
  return log
    .split('\n')
    .filter((line) => ids.some((id) => line.includes(id)))
    .slice(-max)
    .map((line) => line.trim());
}
