// agnhost mounttest (test/images/agnhost/mounttest) as a busybox script. Upstream's volume cases
// run it and match its output; no registry is reachable here, so busybox's stat prints the same
// lines: Go's %q of a plain path, os.FileMode strings ("dtrwxrwxrwx", Perm() "-rw-r--r--"),
// statfs magic as a decimal number or "tmpfs", uid and gid, and the file's content.

/** What mounttest writes into a new file, and waits for in a loop (without its newline). */
export const MOUNTTEST_CONTENT = 'mount-tester new file';

/** TMPFS_MAGIC in stat -f's hex, which mounttest prints as "tmpfs". */
const TMPFS_MAGIC_HEX = '1021994';

/**
 * The flags upstream's cases pass, each a path (retryTime in seconds, mounttest's default 180).
 * They run in mounttest's order whatever the object's: fs type, new files, mode, perm, owner,
 * content, content in a loop.
 */
export interface MounttestFlags {
  fsType?: string;
  newFile0644?: string;
  newFile0666?: string;
  newFile0660?: string;
  newFile0777?: string;
  fileMode?: string;
  filePerm?: string;
  fileOwner?: string;
  fileContent?: string;
  fileContentInLoop?: string;
  retryTime?: number;
  /** --break_on_expected_content (default true): stop the loop once the content is mounttest's. */
  breakOnExpectedContent?: boolean;
}

// `mode P` prints os.FileMode.String() of P, following links as os.Stat does (a downwardAPI
// file is a link into ..data): `d` for a directory, then setuid `u`, setgid `g`, sticky `t` in
// Go's order, `-` when none, then rwx; `mode P perm` prints Mode().Perm(). Regular files and
// directories are all the cases stat. `read_file P` sets $c to P's content exactly, its last newline
// kept (the `.` guards it from $(...)), as mounttest prints it. A failed step prints mounttest's
// error line and the script still runs the rest, then exits 1.
const FUNCTIONS = `umask 0
rc=0
fail() { echo "$1"; rc=1; }
mode() {
  f=$(stat -L -c %f "$1") || return 1
  m=$((0x$f)); s=
  if [ "$2" != perm ]; then
    [ $((m & 61440)) = 16384 ] && s=d
    [ $((m & 2048)) = 0 ] || s=\${s}u
    [ $((m & 1024)) = 0 ] || s=\${s}g
    [ $((m & 512)) = 0 ] || s=\${s}t
  fi
  [ -n "$s" ] || s=-
  for b in 256:r 128:w 64:x 32:r 16:w 8:x 4:r 2:w 1:x; do
    if [ $((m & \${b%:*})) = 0 ]; then s=$s-; else s=$s\${b#*:}; fi
  done
  echo "$s"
}
read_file() { c=$(cat "$1" 2>/dev/null && echo .) || return 1; c=\${c%.}; }
fs_type() {
  t=$(stat -f -c %t "$1") || { fail "error from statfs(\\"$1\\")"; return; }
  if [ "$t" = ${TMPFS_MAGIC_HEX} ]; then t=tmpfs; else t=$((0x$t)); fi
  echo "mount type of \\"$1\\": $t"
}
content() {
  read_file "$1" || { fail "error reading file content for \\"$1\\""; return; }
  printf 'content of file "%s": %s\\n' "$1" "$c"
}
new_file() {
  { echo '${MOUNTTEST_CONTENT}' > "$1" && chmod "$2" "$1"; } || { fail "error writing new file \\"$1\\""; return; }
  content "$1"
}
file_mode() { s=$(mode "$1") || { fail "error from Stat(\\"$1\\")"; return; }; echo "mode of file \\"$1\\": $s"; }
file_perm() { s=$(mode "$1" perm) || { fail "error from Stat(\\"$1\\")"; return; }; echo "perms of file \\"$1\\": $s"; }
file_owner() {
  o=$(stat -L -c '%u %g' "$1") || { fail "error from stat(\\"$1\\")"; return; }
  echo "owner UID of \\"$1\\": \${o% *}"
  echo "owner GID of \\"$1\\": \${o#* }"
}
# $2: retry seconds; $3: break on the expected content (true/false).
content_in_loop() {
  end=$(($(date +%s) + $2)); ok=1
  while [ "$(date +%s)" -lt $end ]; do
    if read_file "$1"; then
      ok=0; printf 'content of file "%s": %s\\n' "$1" "$c"
      if [ $3 = true ]; then
        [ "$c" = '${MOUNTTEST_CONTENT}
' ] && break
        echo 'Unexpected content. Retrying'
      fi
    else
      ok=1; echo "Error reading file $1, retrying"
    fi
    sleep 2
  done
  [ $ok = 0 ] || rc=1
}`;

const quote = (path: string) => `'${path}'`;

/** The script: `( ... )`, so it chains with other commands; its status is mounttest's. */
export function mounttest(f: MounttestFlags): string {
  const steps: [string | undefined, string][] = [
    [f.fsType, 'fs_type'],
    [f.newFile0644, 'new_file {} 0644'],
    [f.newFile0666, 'new_file {} 0666'],
    [f.newFile0660, 'new_file {} 0660'],
    [f.newFile0777, 'new_file {} 0777'],
    [f.fileMode, 'file_mode'],
    [f.filePerm, 'file_perm'],
    [f.fileOwner, 'file_owner'],
    [f.fileContent, 'content'],
    [f.fileContentInLoop, `content_in_loop {} ${f.retryTime ?? 180} ${f.breakOnExpectedContent ?? true}`],
  ];
  const run = steps
    .filter((s): s is [string, string] => s[0] !== undefined)
    .map(([path, step]) =>
      step.includes('{}') ? step.replace('{}', quote(path)) : `${step} ${quote(path)}`,
    );
  return `(\n${FUNCTIONS}\n${run.join('\n')}\nexit $rc\n)`;
}

/** Go's os.FileMode(mode).String() for a regular file, e.g. -rw-r--r-- for 0644. */
function fileModeString(mode: number): string {
  return `-${[...'rwxrwxrwx'].map((c, i) => (mode & (0o400 >> i) ? c : '-')).join('')}`;
}

/** getFileModeRegex's Linux line: what `fileMode` prints for a file of `mode` (the kubelet's 0644 default). */
export const fileModeLine = (path: string, mode = 0o644) => `mode of file "${path}": ${fileModeString(mode)}`;
