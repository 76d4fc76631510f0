#!/usr/bin/env bash
# Builds the outside judges crictl and critest (cri-tools v1.26.0, upstream source with its vendored
# modules) with Debian's Go, offline, into a cache outside the project tree. The cache is keyed by the
# source tarball's sha256 and the Go version, so a second run only checks. Prints the tools' directory.
#   bash scripts/cri-tools.sh            # build if needed
#   KH_CRI_TOOLS_DIR=/opt/x bash ...     # another cache directory
# The source tarball comes from the steering repo's shared/tools (beside this clone), or KH_CRI_TOOLS_SRC.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=1.26.0
SRC=${KH_CRI_TOOLS_SRC:-$(realpath -m ../shared/tools/cri-tools-${VERSION}.tar.gz)}
DIR=${KH_CRI_TOOLS_DIR:-/var/cache/kubelet-harness/cri-tools-${VERSION}}
say() { printf '[cri-tools] %s\n' "$*" >&2; }
fail() {
  say "ERROR: $*"
  exit 1
}

[[ -f $SRC ]] || fail "no source tarball at $SRC (set KH_CRI_TOOLS_SRC to cri-tools-${VERSION}.tar.gz)"
if ! command -v go >/dev/null; then
  [[ $(id -u) -eq 0 ]] || fail "Go is missing; install Debian's golang-go (apt-get install golang-go) as root"
  say "installing Debian's golang-go"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null; }
fi

key="$(sha256sum "$SRC" | cut -d' ' -f1) $(go version)"
if [[ -x $DIR/crictl && -x $DIR/critest && "$(cat "$DIR/.key" 2>/dev/null)" == "$key" ]]; then
  say "crictl and critest v${VERSION} are cached in $DIR"
  echo "$DIR"
  exit 0
fi

say "building crictl and critest v${VERSION} offline (about 3 min on 2 cores)"
started=$SECONDS
work=$(mktemp -d /tmp/kh-cri-tools-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$SRC"
mkdir -p "$DIR"
(
  cd "$work"/cri-tools-*
  export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOCACHE="$work/gocache" GOPATH="$work/gopath"
  go build -o "$DIR/crictl.new" ./cmd/crictl
  say "crictl built after $((SECONDS - started)) s; building critest"
  go test -c -o "$DIR/critest.new" ./cmd/critest
)
mv "$DIR/crictl.new" "$DIR/crictl"
mv "$DIR/critest.new" "$DIR/critest"
echo "$key" >"$DIR/.key"
say "built in $((SECONDS - started)) s: $DIR/crictl, $DIR/critest"
echo "$DIR"
