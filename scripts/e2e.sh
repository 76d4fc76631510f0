#!/usr/bin/env bash
# The README's main job: prepares the machine, then runs the end-to-end matrix (`turbo run test:e2e`)
# against real runtimes. Pass a filter through, e.g. `bash scripts/e2e.sh --runtime containerd`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh

step "end-to-end matrix"
rm -f packages/*/.reports/vitest-e2e.json apps/*/.reports/vitest-e2e.json e2e/.reports/vitest-e2e.json
status=0
npx turbo run test:e2e --continue --concurrency=1 -- "$@" || status=$?

step "summary"
node scripts/test-summary.mjs test:e2e=vitest-e2e.json || status=1
exit "$status"
