#!/usr/bin/env bash
# Everything both README commands need on a fresh Debian machine: host packages and a running dockerd,
# npm dependencies (Node 22 comes with them, see PLATFORM.md), and the local images (content-hashed,
# so a second run is a cache hit). Sourced by scripts/test.sh and scripts/e2e.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step_started=$SECONDS
step() { echo "==> $* (t+$((SECONDS - step_started))s)"; }

step "host setup: Debian packages and dockerd"
bash scripts/setup-host.sh

# npm ci wipes node_modules; skip it when the lockfile is the one already installed.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ "$(cat node_modules/.kh-lock-hash 2>/dev/null)" != "$lock_hash" ]]; then
  step "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.kh-lock-hash
else
  step "npm dependencies are current"
fi
# The project's scripts need Node 22 (the `node` package's binary); the system's may be older.
export PATH="$PWD/node_modules/.bin:$PATH"
echo "    node for project tasks: $(node --version)"

step "build"
npx turbo run build --output-logs=errors-only

step "local images"
npm run --silent images

step "upstream CRI clients (crictl, critest): the outside judges of our CRI servers"
KH_CRI_TOOLS_DIR=$(bash scripts/cri-tools.sh)
export KH_CRI_TOOLS_DIR
# v1.33 (Kubernetes 1.33's era) judges the runtimes of each Debian release in their nodes
# (cri-conformance critest-nodes); its Go 1.24 comes from a local Debian trixie image.
step "critest v1.33 (Go 1.24, in the go-trixie image)"
bash scripts/cri-tools.sh 1.33.0 >/dev/null
