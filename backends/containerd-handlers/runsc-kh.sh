#!/bin/sh
# containerd's runc v2 shim drives runsc as if it were runc; this wrapper (the runtime's
# BinaryName) closes the gaps that the missing containerd-shim-runsc-v1 would have covered:
# - runsc 2022-12 takes /proc/sys/net/core/rmem_default as proof of the root network namespace,
#   but kernel 6.x has it in every netns. --network=host makes gVisor use the netns it starts in,
#   the pod's (set up by containerd's CNI), through the host stack instead of its netstack.
# - runsc hands a subcontainer the stdio of `runsc start`, but the shim gives the container's
#   stdio pipes to `create` and runs `start` with a capture pipe (output lost, Start hangs).
#   `create` leaves a holder process keeping those pipes open; `start` takes them from it.
# - The shim reports a container's exit when the pid in --pid-file exits; for a subcontainer
#   runsc writes the sandbox's pid, which lives on. `create` puts a waiter's pid there instead:
#   it waits for `start`, then for `runsc wait`, and exits with the container's status.
# - The shim takes a failed `kill` of a finished process as "already finished" only when runc's
#   words "container not running" are in the output; runsc says "... is not running".
RUNSC=/usr/bin/runsc
state=/run/runsc-kh
cmd= root= bundle= pidfile= prev=
for a; do
  case "$prev" in
  --root) root=$a ;; --bundle | -b) bundle=$a ;; --pid-file) pidfile=$a ;;
  esac
  case "$a" in
  --root=*) root=${a#*=} ;; --bundle=*) bundle=${a#*=} ;; --pid-file=*) pidfile=${a#*=} ;;
  create | start | delete | kill) [ -z "$cmd" ] && cmd=$a ;;
  esac
  prev=$a
done
for id; do :; done # the container id is the last argument
dir=$state/$id
runsc() { $RUNSC ${root:+--root "$root"} --network=host "$@"; }
stop_helpers() {
  for f in holder waiter; do [ -s "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null; done
  rm -rf "$dir"
}
case "$cmd" in
create)
  $RUNSC --network=host "$@" || exit
  grep -q '"io.kubernetes.cri.container-type":"container"' "$bundle/config.json" 2>/dev/null || exit 0
  mkdir -p "$dir"
  (exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- sleep 2147483647) &
  echo $! > "$dir/holder"
  (
    exec </dev/null >/dev/null 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
    until [ -e "$dir/started" ]; do sleep 0.05; done
    status=$(runsc wait "$id" | sed -n 's/.*"exitStatus": *\([0-9]*\).*/\1/p')
    exit "${status:-255}"
  ) &
  echo $! > "$dir/waiter"
  printf %s $! > "$pidfile"
  exit 0
  ;;
start)
  if [ -s "$dir/holder" ]; then
    holder=$(cat "$dir/holder")
    (exec </proc/$holder/fd/0 >/proc/$holder/fd/1 2>/proc/$holder/fd/2 $RUNSC --network=host "$@") || exit
    kill "$holder"
    touch "$dir/started"
    exit 0
  fi
  ;;
delete) stop_helpers ;;
kill)
  out=$($RUNSC --network=host "$@" 2>&1) && exit 0
  status=$?
  case "$out" in *"is not running"*) out="container not running: $out" ;; esac
  echo "$out" >&2
  exit $status
  ;;
esac
exec $RUNSC --network=host "$@"
