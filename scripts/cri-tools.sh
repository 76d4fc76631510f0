#!/usr/bin/env bash
# Builds the outside judges crictl and critest (upstream cri-tools source with its vendored modules),
# offline, into a cache outside the project tree. Prints the tools' directory.
#   bash scripts/cri-tools.sh            # v1.26.0 (the default judge), with the host's Go (Debian 12: 1.19)
#   bash scripts/cri-tools.sh 1.33.0     # a release whose go.mod needs a newer Go than the host's: built in
#                                        # the local go-trixie image (Debian 13's Go 1.24; needs the project built)
#   KH_CRI_TOOLS_DIR=/opt/x bash ...     # another directory for the default version
#   KH_CRI_TOOLS_CACHE=/opt/c bash ... V # another parent of cri-tools-<version> (default /var/cache/kubelet-harness)
# The cache is keyed by the source tarball's sha256 and the Go version, so a second run only checks.
# The source tarball comes from the steering repo's shared/tools (beside this clone), or KH_CRI_TOOLS_SRC.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEFAULT_VERSION=1.26.0
VERSION=${1:-$DEFAULT_VERSION}
SRC=${KH_CRI_TOOLS_SRC:-$(realpath -m ../shared/tools/cri-tools-${VERSION}.tar.gz)}
DIR=${KH_CRI_TOOLS_CACHE:-/var/cache/kubelet-harness}/cri-tools-${VERSION}
# KH_CRI_TOOLS_DIR names the default judge's directory (tests read it); other versions keep their own.
[[ $VERSION == "$DEFAULT_VERSION" && -n ${KH_CRI_TOOLS_DIR:-} ]] && DIR=$KH_CRI_TOOLS_DIR
GO_IMAGE=go-trixie
say() { printf '[cri-tools] %s\n' "$*" >&2; }
fail() {
  say "ERROR: $*"
  exit 1
}

[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "usage: bash scripts/cri-tools.sh [VERSION, e.g. 1.33.0]"
[[ -f $SRC ]] || fail "no source tarball at $SRC (set KH_CRI_TOOLS_SRC to cri-tools-${VERSION}.tar.gz)"
gomod=$(tar -xzOf "$SRC" "cri-tools-${VERSION}/go.mod") || fail "$SRC holds no cri-tools-${VERSION}/go.mod"
module=$(awk '$1 == "module" { print $2; exit }' <<<"$gomod")
needs_go=$(awk '$1 == "go" { print $2; exit }' <<<"$gomod")

# Whether Go version $1 (1.19.8) is at least $2 (1.24.1).
go_at_least() { [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1) == "$2" ]]; }

if command -v go >/dev/null && go_at_least "$(go env GOVERSION | sed 's/^go//')" "$needs_go"; then
  where=host
elif [[ $VERSION == "$DEFAULT_VERSION" ]]; then
  # The default judge builds with Debian 12's Go: install it on a fresh machine.
  [[ $(id -u) -eq 0 ]] || fail "Go is missing; install Debian's golang-go (apt-get install golang-go) as root"
  say "installing Debian's golang-go"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null; }
  go_at_least "$(go env GOVERSION | sed 's/^go//')" "$needs_go" || fail "v${VERSION} needs Go ${needs_go}; the host has $(go version)"
  where=host
else
  where=container
fi

if [[ $where == host ]]; then
  go_version=$(go version)
else
  # The go-trixie image is a testkit recipe: built locally (debootstrap), never pulled.
  node=node_modules/.bin/node
  [[ -x $node ]] || node=node
  [[ -f packages/testkit/dist/cli.js ]] ||
    fail "v${VERSION} needs Go ${needs_go}, built in the $GO_IMAGE image: build the project first (npm ci && npx turbo run build)"
  image=$("$node" packages/testkit/dist/cli.js images "$GO_IMAGE" | tee >(sed 's/^/[cri-tools] /' >&2) |
    awk -v name="$GO_IMAGE" '$1 == name { print $2 }')
  [[ -n $image ]] || fail "could not build the $GO_IMAGE image"
  go_version=$(docker run --rm --network none "$image" go version)
  go_at_least "$(sed -E 's/^go version go([0-9.]+).*/\1/' <<<"$go_version")" "$needs_go" ||
    fail "v${VERSION} needs Go ${needs_go}; $image has $go_version"
fi

# The version stamp is part of the key: binaries built before it was added say "unknown".
key="$(sha256sum "$SRC" | cut -d' ' -f1) ${go_version} stamped"
if [[ -x $DIR/crictl && -x $DIR/critest && "$(cat "$DIR/.key" 2>/dev/null)" == "$key" ]]; then
  say "crictl and critest v${VERSION} are cached in $DIR"
  echo "$DIR"
  exit 0
fi

say "building crictl and critest v${VERSION} offline with ${go_version#go version } (${where}; 1-3 min on 2 cores)"
started=$SECONDS
mkdir -p "$DIR"
rm -f "$DIR/crictl.new" "$DIR/critest.new"
# As upstream's Makefile: static, trimmed paths, `--version` tells the release.
build='
  export GOFLAGS="-mod=vendor -trimpath" GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0
  cd "$1"/cri-tools-*
  ldflags="-X $2/pkg/version.Version=$3"
  go build -ldflags "$ldflags" -o "$4/crictl.new" ./cmd/crictl
  echo "[cri-tools] crictl built; building critest" >&2
  go test -c -ldflags "$ldflags" -o "$4/critest.new" ./cmd/critest
'
if [[ $where == host ]]; then
  work=$(mktemp -d /tmp/kh-cri-tools-build.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  tar -C "$work" -xzf "$SRC"
  GOCACHE="$work/gocache" GOPATH="$work/gopath" bash -ec "$build" build "$work" "$module" "$VERSION" "$DIR"
else
  # No network in the build container: the vendored modules are all it gets.
  docker run --rm --network none --name "kh-cri-tools-build-$$" \
    -v "$SRC:/src.tar.gz:ro" -v "$DIR:/out" "$image" \
    bash -ec "mkdir /build && tar -C /build -xzf /src.tar.gz
$build" build /build "$module" "$VERSION" /out
fi
mv "$DIR/crictl.new" "$DIR/crictl"
mv "$DIR/critest.new" "$DIR/critest"
echo "$key" >"$DIR/.key"
say "built in $((SECONDS - started)) s: $DIR/crictl, $DIR/critest"
echo "$DIR"
