#!/usr/bin/env bash
# The README's test command: prepares the machine, then lint, typecheck and every package's tests
# (unit tests and integration tests against real dockerd and containerd). Ends with `N passed, N failed`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh

# A lint or type error fails the run but does not stop it: the tests still report. Each failed check
# is written to .reports/failed-checks.txt, which the summary counts, so the closing line says it.
status=0
checks=.reports/failed-checks.txt
mkdir -p .reports && rm -f "$checks"
failed() { status=1; echo "    $1 FAILED${2:+: $2}"; echo "$1${2:+ ($2)}" >>"$checks"; }
step "lint (Biome)"
npx biome ci . || failed lint 'npx biome ci .'

step "import graph: no new circles between files or cycles between folders (scripts/import-graph.allow.json)"
node scripts/import-graph.mjs || failed 'import graph' 'node scripts/import-graph.mjs'
node --test scripts/import-graph.test.mjs >/dev/null || failed 'import graph tests' 'node --test scripts/import-graph.test.mjs'
npx turbo run build --filter=@kh/e2e --output-logs=errors-only >/dev/null && node --test scripts/node-e2e-coverage.test.mjs >/dev/null && node scripts/node-e2e-coverage.mjs --check || failed 'node e2e coverage' 'docs/node-e2e-coverage.md stale or scenario metadata wrong: node scripts/node-e2e-coverage.mjs'

step "typecheck"
npx turbo run typecheck --output-logs=errors-only || failed typecheck 'npx turbo run typecheck'

step "tests"
rm -f packages/*/.reports/vitest.json apps/*/.reports/vitest.json e2e/.reports/vitest.json
# --continue: one failing package must not hide the others' results. Two at a time: the integration
# suites drive real runtimes, and more parallelism only makes them time out on two cores.
# Two lanes of one suite each, not `--concurrency=2`: turbo starts tasks in graph order, which ran
# the harness's six-minute suite last and alone (2026-11-30: 916 s where the suites sum to 1,497).
# The three longest suites (harness, node-agent, dockershim) are one lane; every other package,
# new ones included, is the other. `--only`: prepare.sh built everything, and two turbo runs must
# not restore the same build outputs at once.
long=(--filter=@kh/harness --filter=@kh/node-agent --filter=@kh/dockershim)
npx turbo run test --continue --only --concurrency=1 "${long[@]}" &
lane=$!
trap 'kill "$lane" 2>/dev/null' EXIT
npx turbo run test --continue --only --concurrency=1 "${long[@]/--filter=/--filter=!}" || status=1
wait "$lane" || status=1
trap - EXIT

step "summary"
node --test scripts/bench-serial.test.mjs >/dev/null || failed 'bench-serial tests' 'node --test scripts/bench-serial.test.mjs'
node --test scripts/test-summary.test.mjs >/dev/null || failed 'summary tests' 'node --test scripts/test-summary.test.mjs'
node scripts/test-summary.mjs --checks "$checks" test=vitest.json || status=1
exit "$status"
