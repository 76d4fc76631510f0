import { basename } from 'node:path';
import type { CaseStatus } from '../suite/runner.js';
import { type CritestSkip, skipReason } from './skips.js';

/** One critest spec's outcome on one endpoint. */
export interface SpecResult {
  /** The spec's full text: its containers' texts and its own, as ginkgo prints and matches them. */
  id: string;
  status: CaseStatus;
  durationMs: number;
  /** Why it failed (excerpt of the assertion, the gRPC status, where) or was skipped. */
  message?: string;
}

/** The parts of ginkgo v2's JSON report (`--ginkgo.json-report`) this reads. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts: string[] | null;
  LeafNodeType: string;
  LeafNodeText: string;
  State: string;
  RunTime: number;
  Failure?: {
    Message: string;
    Location?: { FileName: string; LineNumber: number };
    FailureNodeType?: string;
  };
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
export function failureExcerpt(failure: NonNullable<GinkgoSpecReport['Failure']>): string {
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
      if (FAILED_STATES.has(spec.State)) {
        results.push({
          id,
          status: 'failed',
          durationMs,
          message: spec.Failure ? failureExcerpt(spec.Failure) : spec.State,
        });
      } else if (spec.State === 'passed') {
        results.push({ id, status: 'passed', durationMs });
      } else {
        // Skipped: by our list (reason), by the spec itself at run time (its message), or not selected.
        const message = skipReason(id, skips) ?? (spec.Failure?.Message.trim() || undefined);
        if (message) results.push({ id, status: 'skipped', durationMs, message });
      }
    }
  }
  return results;
}
