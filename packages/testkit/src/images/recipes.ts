/**
 * The image recipes, as data: everything that decides an image's content is in here or in the
 * inputs resolved at build time (see hash.ts), so the tag can be a hash of it.
 */

/**
 * The Debian releases a node image is built from. Each carries its own containerd, Docker, runc,
 * crun and gVisor, so the matrix can ask "which runtime versions pass?" the way kind answers it
 * with a node image per Kubernetes version.
 */
export const NODE_RELEASES = ['bookworm', 'trixie', 'forky'] as const;
export type NodeRelease = (typeof NODE_RELEASES)[number];
/**
 * The release of the default columns and of every container that only needs "a node" (apiserver,
 * registry, fake node): trixie, Debian stable, whose dockerd (26.1) is free of 20.10.24's
 * libnetwork deadlock (PLATFORM.md).
 */
export const DEFAULT_NODE_RELEASE: NodeRelease = 'trixie';

export type NodeImageName = `node-${NodeRelease}`;
export const nodeImageName = (release: NodeRelease): NodeImageName => `node-${release}`;

export const WORKLOAD_IMAGES = [
  'pause',
  'busybox',
  'httpd',
  'memhog',
  'diskhog',
  'nonroot',
  'nonewprivs',
  'usergroups',
  'entrypoint',
  'netexec',
] as const;
export type WorkloadImageName = (typeof WORKLOAD_IMAGES)[number];
/**
 * Build environments for tools the host's Debian is too old to build: `go-trixie` has Debian 13's
 * Go (1.24), which cri-tools v1.33 needs (Debian 12's is 1.19; scripts/cri-tools.sh).
 */
export const TOOLCHAIN_IMAGES = ['go-trixie'] as const;
/**
 * `node` is the default release's node image (the same recipe and reference as
 * `node-${DEFAULT_NODE_RELEASE}`): what a test or container that only needs "a node" asks for.
 */
export const IMAGE_NAMES = [
  ...WORKLOAD_IMAGES,
  'node',
  ...NODE_RELEASES.map(nodeImageName),
  ...TOOLCHAIN_IMAGES,
] as const;
export type ImageName =
  | (typeof WORKLOAD_IMAGES)[number]
  | 'node'
  | NodeImageName
  | (typeof TOOLCHAIN_IMAGES)[number];
/** What `kh-testkit images` builds when no name is given: the workloads and the default node. */
export const DEFAULT_IMAGES: readonly ImageName[] = [...WORKLOAD_IMAGES, 'node'];

export const IMAGE_REPOSITORY_PREFIX = 'kubelet-harness';

/** Image config applied at import time (docker import --change). */
export interface ImageConfig {
  cmd?: string[];
  entrypoint?: string[];
  env?: string[];
  exposedPorts?: string[];
  workdir?: string;
  /** The image's USER: what a runtime runs the container as when the pod names no runAsUser. */
  user?: string;
}

export interface ImageFile {
  content: string;
  mode: number;
}

/**
 * A C program compiled into the image by the host's gcc (Debian `gcc`, `libc6-dev`), statically
 * linked so it needs nothing from the image. Like every file of a busybox image it belongs to root,
 * so a mode with the setuid bit (0o4755) makes a setuid-root binary.
 */
export interface ImageProgram {
  source: string;
  mode: number;
  /** Static libraries it links besides libc: `-l` name to the Debian package that ships lib<name>.a. */
  libs?: Record<string, string>;
}

/**
 * A Go program built into the image (images/go.ts): a main package in packages/testkit/images/<dir>,
 * built static and offline against cri-tools' vendored modules, in the go-trixie image.
 */
export interface ImageGoProgram {
  dir: string;
  mode: number;
}

/** A tiny image: the static busybox with every applet linked in /bin, plus a few files and programs. */
export interface BusyboxRecipe {
  kind: 'busybox';
  name: ImageName;
  description: string;
  files: Record<string, ImageFile>;
  /** Programs to compile, by path in the image; their compiler is a hash input (hash.ts). */
  programs?: Record<string, ImageProgram>;
  /** Go programs, by path in the image; their toolchain, vendored modules and source are hash inputs. */
  goPrograms?: Record<string, ImageGoProgram>;
  config: ImageConfig;
}

/** A Debian root filesystem made by debootstrap. */
export interface DebootstrapRecipe {
  kind: 'debootstrap';
  name: ImageName;
  description: string;
  suite: NodeRelease;
  /**
   * debootstrap's script for the suite, when this machine's debootstrap has none of that name
   * (Debian 12's knows no `forky`; testing is built like `sid`).
   */
  script?: string;
  variant: string;
  packages: string[];
  /**
   * Installed with apt-get inside the root filesystem once debootstrap is done: packages whose
   * dependencies debootstrap's own resolver cannot settle, as elogind's libelogind0 taking the
   * place of the libsystemd0 that minbase's apt already pulled in.
   */
  aptPackages?: string[];
  /** Symbolic links, path to absolute target, made last; a target that does not exist fails the build. */
  links?: Record<string, string>;
  /** Packages whose installed versions the image records (label and file; see build.ts). */
  recordVersions: string[];
  config: ImageConfig;
}

export type Recipe = BusyboxRecipe | DebootstrapRecipe;

/** Every busybox image's /etc/passwd and /etc/group; a recipe file of the same path replaces them. */
export const BUSYBOX_PASSWD = 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n';
export const BUSYBOX_GROUP = 'root:x:0:\nnogroup:x:65534:\n';

/** PID 1 ignores SIGTERM without a handler; the trap lets a runtime stop these images at once. */
const STOP_ON_TERM = "trap 'exit 0' TERM INT";
const FOREVER = 'sleep 2147483647';

const sh = (script: string): ImageFile => ({ content: `#!/bin/sh\n${script}`, mode: 0o755 });

const MEMHOG =
  sh(`# Grows its memory by MEMHOG_STEP_MB every MEMHOG_INTERVAL_S seconds until it holds MEMHOG_MB
# (0 = no limit), then keeps it. tail holds the newline-free stream of zeros in memory while
# it waits for the end of its input, so its resident size is the amount written so far.
${STOP_ON_TERM}
total=\${MEMHOG_MB:-256}
step=\${MEMHOG_STEP_MB:-16}
interval=\${MEMHOG_INTERVAL_S:-1}
{
  held=0
  while [ "$total" -eq 0 ] || [ "$held" -lt "$total" ]; do
    head -c "\${step}m" /dev/zero
    held=$((held + step))
    echo "memhog: holding \${held} MiB" >&2
    sleep "$interval"
  done
  echo "memhog: reached \${held} MiB, holding" >&2
  exec ${FOREVER}
} | tail > /dev/null &
wait
`);

const DISKHOG =
  sh(`# Writes DISKHOG_STEP_MB files into DISKHOG_DIR every DISKHOG_INTERVAL_S seconds until it has
# written DISKHOG_MB (0 = until the disk is full), then keeps them. The default directory is in
# the container's writable layer; point it at a volume to fill that instead.
${STOP_ON_TERM}
total=\${DISKHOG_MB:-256}
step=\${DISKHOG_STEP_MB:-16}
interval=\${DISKHOG_INTERVAL_S:-1}
dir=\${DISKHOG_DIR:-/hog}
mkdir -p "$dir"
written=0
while [ "$total" -eq 0 ] || [ "$written" -lt "$total" ]; do
  dd if=/dev/zero of="$dir/hog-$written" bs=1M count="$step" 2>/dev/null || { echo "diskhog: write failed at \${written} MiB" >&2; break; }
  written=$((written + step))
  echo "diskhog: wrote \${written} MiB" >&2
  sleep "$interval"
done
echo "diskhog: holding \${written} MiB in $dir" >&2
${FOREVER} &
wait
`);

/**
 * Prints the real and the effective uid: run as a non-root user, this setuid-root program shows
 * whether the kernel let it gain root (no_new_privs unset) or not (allowPrivilegeEscalation: false).
 * The line upstream's AllowPrivilegeEscalation cases look for is `Effective uid: <n>`.
 */
const NNP = `#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("Real uid: %u\\nEffective uid: %u\\n", (unsigned)getuid(), (unsigned)geteuid());
  return 0;
}
`;

/**
 * The two agnhost subcommands upstream's Containers cases drive through the image's ENTRYPOINT
 * and CMD: `pause` prints "Paused" and waits, `entrypoint-tester` prints its argv as Go's
 * fmt.Println(os.Args) does, so the output names the program the runtime ran ($0) and its args.
 */
const AGNHOST_PAUSE = `if [ "$1" = pause ]; then
  echo Paused
  ${FOREVER} &
  wait
  exit 0
fi`;
const AGNHOST_ENTRYPOINT = sh(`${STOP_ON_TERM}
${AGNHOST_PAUSE}
echo "[$0 $*]"
`);

/**
 * agnhost's netexec as far as upstream's lifecycle hook cases use it: an HTTP server on
 * --http-port (8080) that logs each request line ("GET /echo?msg=poststart") to its log, answers
 * /echo?msg=M with M, and /dial?host=H&port=P&request=R by requesting http://H:P/R and returning
 * {"responses":[...]}. busybox nc runs NETEXEC_HANDLER once per connection; its stderr is the log.
 */
const NETEXEC = sh(`${STOP_ON_TERM}
${AGNHOST_PAUSE}
[ "$1" = liveness ] && exec /liveness
[ "$1" = grpc-health-checking ] && shift && exec /grpc-health-checking "$@"
[ "$1" = netexec ] || { echo "unknown command: $1" >&2; exit 1; }
shift
port=8080
cert=
key=
while [ $# -gt 0 ]; do
  case $1 in
    --http-port) port=$2; shift ;;
    --udp-port) shift ;; # no UDP server: upstream's hook cases turn it off (-1)
    --tls-cert-file) cert=$2; shift ;;
    --tls-private-key-file) key=$2; shift ;;
  esac
  shift
done
if [ -n "$cert" ]; then
  # HTTPS on the port: tlsproxy relays each connection to the plain server on port + 10000.
  plain=$((port + 10000))
  nc -ll -p "$plain" -e /netexec-handler &
  /tlsproxy "$cert" "$key" "$port" "$plain" &
  echo "Started HTTPS server on port $port"
else
  nc -ll -p "$port" -e /netexec-handler &
  echo "Started HTTP server on port $port"
fi
wait
`);
const NETEXEC_HANDLER = sh(`CR=$(printf '\\r')
read -r method target _
target=\${target%"$CR"}
while read -r line && [ -n "\${line%"$CR"}" ]; do :; done
echo "$method $target" >&2
reply() { printf 'HTTP/1.1 %s\\r\\nContent-Type: text/plain\\r\\nContent-Length: %s\\r\\nConnection: close\\r\\n\\r\\n%s' "$1" "\${#2}" "$2"; }
query=\${target#*\\?}
[ "$query" = "$target" ] && query=
# A query parameter, URL-decoded (httpd -d).
arg() { for kv in $(echo "$query" | tr '&' ' '); do [ "\${kv%%=*}" = "$1" ] && httpd -d "\${kv#*=}" && return; done; }
case \${target%%\\?*} in
  /echo) reply '200 OK' "$(arg msg)" ;;
  # busybox wget's own -T crashes (static 1.35), so timeout bounds the request.
  /dial)
    if out=$(timeout 5 wget -q -O - "http://$(arg host):$(arg port)/$(arg request)" 2>&1); then
      reply '200 OK' "{\\"responses\\":[\\"$out\\"]}"
    else
      reply '500 Internal Server Error' "{\\"errors\\":[\\"$out\\"]}"
    fi ;;
  *) reply '404 Not Found' '404 page not found' ;;
esac
`);
/**
 * agnhost's liveness, for upstream's container_probe.go cases: an HTTP server on port 8080 whose
 * /healthz answers 200 "ok" for its first 10 s and 500 after, and /redirect?loc=L 302 to L with
 * Go's http.Redirect body. It answers in its own process: busybox httpd's CGI forked a shell per
 * probe, and under the matrix's load that outlived upstream's 1 s probe timeout.
 */
const LIVENESS = `/* liveness: agnhost liveness's /healthz and /redirect on :8080, one connection at a time. */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* url.QueryUnescape: %XX and '+' for a space; 0 when an escape is malformed. */
static int unescape(const char *in, size_t n, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    if (in[i] == '+') {
      out[o++] = ' ';
    } else if (in[i] == '%') {
      if (i + 2 >= n) return 0;
      int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0) return 0;
      out[o++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      out[o++] = in[i];
    }
  }
  out[o] = 0;
  return 1;
}

/* Go's htmlEscape, as http.Redirect applies it to the body's link. */
static void escape_html(const char *in, char *out, size_t cap) {
  size_t o = 0;
  for (; *in && o + 6 < cap; in++) {
    const char *r = *in == '&' ? "&amp;" : *in == '<' ? "&lt;" : *in == '>' ? "&gt;"
                  : *in == '"' ? "&#34;" : *in == '\\'' ? "&#39;" : 0;
    if (r) {
      strcpy(out + o, r);
      o += strlen(r);
    } else {
      out[o++] = *in;
    }
  }
  out[o] = 0;
}

static void reply(int fd, const char *status, const char *headers, const char *type, const char *body) {
  char buf[12288];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %s\\r\\n%sContent-Type: %s\\r\\nContent-Length: %zu\\r\\nConnection: close\\r\\n\\r\\n%s",
                   status, headers, type, strlen(body), body);
  if (n < 0) return;
  if ((size_t)n > sizeof buf) n = sizeof buf;
  for (int off = 0; off < n;) {
    ssize_t w = write(fd, buf + off, (size_t)(n - off));
    if (w <= 0) return;
    off += (int)w;
  }
}

static void serve(int fd, double up) {
  char req[4096];
  size_t len = 0;
  while (len + 1 < sizeof req) {
    ssize_t r = read(fd, req + len, sizeof req - 1 - len);
    if (r <= 0) break;
    len += (size_t)r;
    req[len] = 0;
    if (strstr(req, "\\r\\n\\r\\n")) break;
  }
  req[len] = 0;
  char method[16], target[2048];
  if (sscanf(req, "%15s %2047s", method, target) != 2) {
    reply(fd, "400 Bad Request", "", "text/plain; charset=utf-8", "400 Bad Request");
    return;
  }
  char *query = strchr(target, '?');
  if (query) *query++ = 0;
  const char *text = "text/plain; charset=utf-8";
  if (strcmp(target, "/healthz") == 0) {
    char body[64];
    if (up > 10) {
      snprintf(body, sizeof body, "error: %g", up);
      reply(fd, "500 Internal Server Error", "", text, body);
    } else {
      reply(fd, "200 OK", "", text, "ok");
    }
  } else if (strcmp(target, "/redirect") == 0) {
    const char *loc = "";
    size_t n = 0;
    for (char *p = query; p && *p;) {
      char *end = strchr(p, '&');
      size_t plen = end ? (size_t)(end - p) : strlen(p);
      if (plen >= 4 && strncmp(p, "loc=", 4) == 0) {
        loc = p + 4;
        n = plen - 4;
        break;
      }
      p = end ? end + 1 : 0;
    }
    char to[2048], escaped[8192], headers[2560], body[8256];
    if (!unescape(loc, n, to, sizeof to)) {
      snprintf(body, sizeof body, "invalid redirect: \\"%.*s\\"\\n", (int)n, loc);
      reply(fd, "400 Bad Request", "X-Content-Type-Options: nosniff\\r\\n", text, body);
      return;
    }
    escape_html(to, escaped, sizeof escaped);
    snprintf(headers, sizeof headers, "Location: %s\\r\\n", to);
    snprintf(body, sizeof body, "<a href=\\"%s\\">Found</a>.\\n\\n", escaped);
    reply(fd, "302 Found", headers, "text/html; charset=utf-8", body);
  } else {
    reply(fd, "404 Not Found", "X-Content-Type-Options: nosniff\\r\\n", text, "404 page not found\\n");
  }
}

int main(void) {
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  signal(SIGPIPE, SIG_IGN);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(8080);
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(s, 128) < 0) {
    perror("liveness: listen on :8080");
    return 1;
  }
  printf("Started HTTP server on port 8080\\n");
  fflush(stdout);
  for (;;) {
    int fd = accept(s, 0, 0);
    if (fd < 0) continue;
    /* A client that sends nothing holds the one connection at a time for 2 s at most. */
    struct timeval t = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
    clock_gettime(CLOCK_MONOTONIC, &now);
    serve(fd, (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9);
    close(fd);
  }
}
`;
/**
 * TLS in front of netexec's plain server: accepts on one port and relays each connection,
 * decrypted, to the plain one on loopback (busybox has no TLS server). Linked against the host's
 * static OpenSSL (Debian `libssl-dev`).
 */
const TLSPROXY = `/*
 * tlsproxy CERT KEY PORT BACKEND_PORT: accepts TLS on PORT and relays each connection, decrypted,
 * to 127.0.0.1:BACKEND_PORT, one process per connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_on(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 64) < 0) return -1;
  return s;
}

static int dial_backend(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) return -1;
  return s;
}

static void relay(SSL_CTX *ctx, int client, int backend_port) {
  SSL *ssl = SSL_new(ctx);
  SSL_set_fd(ssl, client);
  if (SSL_accept(ssl) != 1) return;
  int backend = dial_backend(backend_port);
  if (backend < 0) return;
  char buf[16384];
  for (;;) {
    struct pollfd fds[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
    /* Bytes SSL has already decrypted are not visible to poll. */
    if (SSL_pending(ssl) == 0 && poll(fds, 2, -1) < 0) return;
    if (SSL_pending(ssl) > 0 || fds[0].revents) {
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0 || write(backend, buf, n) != n) return;
    }
    if (fds[1].revents) {
      ssize_t n = read(backend, buf, sizeof buf);
      if (n <= 0 || SSL_write(ssl, buf, (int)n) <= 0) {
        SSL_shutdown(ssl);
        return;
      }
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s CERT KEY PORT BACKEND_PORT\\n", argv[0]);
    return 2;
  }
  signal(SIGCHLD, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
    ERR_print_errors_fp(stderr);
    return 1;
  }
  int ls = listen_on(atoi(argv[3]));
  if (ls < 0) {
    perror("listen");
    return 1;
  }
  for (;;) {
    int c = accept(ls, NULL, NULL);
    if (c < 0) continue;
    if (fork() == 0) {
      close(ls);
      relay(ctx, c, atoi(argv[4]));
      _exit(0);
    }
    close(c);
  }
}
`;
/** agnhost's /localhost.crt and /localhost.key: a self-signed pair for CN localhost, for tests only. */
const LOCALHOST_CRT = `-----BEGIN CERTIFICATE-----
MIIDJzCCAg+gAwIBAgIUOxZrdwJGqODJg5yP+0ZR1AEJr40wDQYJKoZIhvcNAQEL
BQAwFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEzMDAyNTMzN1oYDzIxMjYx
MTA2MDI1MzM3WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwggEiMA0GCSqGSIb3DQEB
AQUAA4IBDwAwggEKAoIBAQCsCC2Xb2uN9mhDTGRqNZg38yOttT1LlBcm0YXmHc7X
2d4YIYe4ahlS44cdEpIDqemx0DVMn8YWwrWRL+Z942XJMY8SAjvLvanjlxgr0pcC
Mlouc/VRBZNeGdvDMvneXviTRhzhzHWeJBURUDlz4Lv5dP4Tkw6WcUKjJe3eYLM2
w7pNeEi+sp7Tz19hZaNzeOsvmlsRIiU4RppPQk/R3fEaYZY+D4guYJW84zdORovF
umZ9q5K8zmKZg15+RNRBblhP5zaKiBhepBTc53MXTOs1Nw+jyj6zePwRE2Uo3pf1
9MrE5vMGfhPYW34oKNPcYhHZKpKkI2UFSn+Y3mFCVSNNAgMBAAGjbzBtMB0GA1Ud
DgQWBBTOw0mY10G0r0qDt+3XQA5ReZSkHzAfBgNVHSMEGDAWgBTOw0mY10G0r0qD
t+3XQA5ReZSkHzAPBgNVHRMBAf8EBTADAQH/MBoGA1UdEQQTMBGCCWxvY2FsaG9z
dIcEfwAAATANBgkqhkiG9w0BAQsFAAOCAQEAaynHCDIOQ/e6yCNiUPVl7OjM6kEN
iYn/9mmVKgSapWs1g70P69itQcVZfy/KTXhsARUkkN9M7X70CvDmVOGksl4IgN5f
uLIvnK/C7YRr3l3qNRIylx4KmbeWblYwq3BV6OmtGdpSHxnpPmZs6YZTo5Ti4NoY
X9TrhPOiwXV0Fs7oXItoqbSFJZTE89qnCJaXQWA20r+zbRHXT7/8mhWUSDI0iFRd
waQMImLEtQ7RNqaDRC2JkiZaAi7qAOqBL3DvdRD0zY2RKlnw/Lsz+fIKSTn2NOoZ
JkEcrvhaSTHlmRtl/wEzG2GbwJQ6v4uucVR3KpTT2l5FZl0FwBuGOTvmqQ==
-----END CERTIFICATE-----
`;
const LOCALHOST_KEY = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCsCC2Xb2uN9mhD
TGRqNZg38yOttT1LlBcm0YXmHc7X2d4YIYe4ahlS44cdEpIDqemx0DVMn8YWwrWR
L+Z942XJMY8SAjvLvanjlxgr0pcCMlouc/VRBZNeGdvDMvneXviTRhzhzHWeJBUR
UDlz4Lv5dP4Tkw6WcUKjJe3eYLM2w7pNeEi+sp7Tz19hZaNzeOsvmlsRIiU4RppP
Qk/R3fEaYZY+D4guYJW84zdORovFumZ9q5K8zmKZg15+RNRBblhP5zaKiBhepBTc
53MXTOs1Nw+jyj6zePwRE2Uo3pf19MrE5vMGfhPYW34oKNPcYhHZKpKkI2UFSn+Y
3mFCVSNNAgMBAAECggEAEsiIedVqOpjh73SC2O87IeNuoi58yn4ZPQgkL5OnnFJ8
eR6yxpmcZDwq6ith5/vVuVrQxv9W+Js6iedfVPV5jUss95Fo3VO7HfocYy8zhRjh
rIVwDpr7k+BiP2DsfrGDQJ6nfqaoB6P27OoD1o7TghGaava5NrHtIwp8JgthkKQG
cMTsXOalkOb2lRhKODzULe8P+lC/EyK6nU8tXKyzuUBEx6RTpXTkTdDCnACrc5P6
O00FL6Otolye/FH061LcxtOUw+xC6KPMnqzkEaR/aGjEvN9YUwgF8GwYgmUSBbqW
qMzP0jYvUkGfSNegy7X9aqgox/39n3FAa+1QWktwXQKBgQDaqLus1m9SIsS3+h24
A4Wrov2g83bqrhy+tCW/ZEufdIDG1PXlRUPbF8Z24I9cZsfjqSXRncBwccYbqi+7
POr7ma9eLc4wJhIgBNNiiMav+Dw3cgZc92BB3gAhaFA9uBNgBzyj7EchHNGP072U
F5U5yETX2r7pw/n7sCaM4jM+2wKBgQDJaQOMO1iRynWVHrJCEUkbdb4oIAEQlz2a
ZahykomikAsSgWBOpHN4X+50V4M79ILBDulcWloRLvHpIOtHdOGFRNTqbEOOAn/b
Ql+9XukH0dlIEP3U48Jy8SOd3as1bHNkcT4+ZO0iriYSu6KnrGuvJq0ayq06PzJA
90/qJCfa9wKBgEOV/hSJX3VS291GCSOUqx+HTMAQIQSe9rGXe0dyV9GcsCVFNBA+
3Z999NFPzeAwwL5EzTTCfvYCpMpuSzyjsro8IbGJlP7a9aVB+JivUEKaBvrYWtEn
gXA6j23EEXFSUWLQOdUtNjss7jV3rFR3CaAHoAfcTEBzW/SI2RGY5WAbAoGATib3
f3SPu5KJ6aENnmFCsusPLFau0xc8iiqkIEEIMxIdmcKl8h4RyEXBK1fBzoPkMLFu
j61ngX9r0wA5C3MpByNcUtJLrFD/975blAm99pDQ9QvS0sbF7v/uyBT5mDNK21Ct
zFwxP+G/WEmCpflbl400Yk7+xLk88MSGN95rsKUCgYEAu+yyu3JEMGhQ1UNjEJek
OJAfJ3tl2IwdUwXuBSuMBKhDCfdkpkMElIGBp0DZ6Xg9c1FThJsNaeVJIpkucn+k
kXXo7vn9FvQ4o6WWSzEnMT0BPvbTxqly6tfrxucueR/RG/BYmQpf6ms//oLTD3wh
TgbNSdbQowz7EvWLgFUwQLU=
-----END PRIVATE KEY-----
`;
/** The agnhost image carries curl, which upstream's exec hooks call; busybox wget does the GET. */
const CURL = sh('exec wget -q -O - "$1"\n');

/** The runtimes a node image carries, with the packages the report names by version. */
const NODE_RUNTIME_PACKAGES = [
  'containerd',
  'runc',
  // Further OCI runtimes, for containerd runtime handlers (RuntimeClass); see backends/containerd-handlers.
  'crun',
  'runsc',
  'docker.io',
  'containernetworking-plugins',
];

/**
 * The node's system bus and standalone logind, for the agent's graceful node shutdown (its delay
 * inhibitor lock, PrepareForShutdown): tini is PID 1 in a node, not systemd, so elogind it is.
 * bookworm's elogind needs the full `dbus`; dbus-bin has dbus-send, which emits the signal.
 */
const NODE_LOGIND_PACKAGES = ['dbus-daemon', 'dbus-bin', 'elogind'];

/** Where every node image has elogind's daemon (bookworm's is /lib/elogind/elogind, later releases' /usr/libexec/elogind). */
export const NODE_ELOGIND_PATH = '/usr/local/sbin/elogind';
const ELOGIND_BINARY: Record<NodeRelease, string> = {
  bookworm: '/lib/elogind/elogind',
  trixie: '/usr/libexec/elogind',
  forky: '/usr/libexec/elogind',
};

function nodeRecipe(release: NodeRelease): DebootstrapRecipe {
  return {
    kind: 'debootstrap',
    name: nodeImageName(release),
    description: `Debian ${release} with containerd, runc, crun, runsc (gVisor), dockerd, CNI plugins, iptables, a system D-Bus and elogind (Node.js comes from the host).`,
    suite: release,
    ...(release === 'forky' ? { script: '/usr/share/debootstrap/scripts/sid' } : {}),
    variant: 'minbase',
    packages: [
      ...NODE_RUNTIME_PACKAGES,
      // From trixie on, docker.io is the engine alone and the `docker` client is its own package.
      ...(release === 'bookworm' ? [] : ['docker-cli']),
      'iptables',
      'ca-certificates',
      // tini reaps the shims that get reparented to PID 1; procps/iproute2 for ps, ip, ss.
      'tini',
      'procps',
      'iproute2',
      // getsubids, through which the kubelet (and upstream's e2e) reads the kubelet user's
      // subordinate IDs for user namespaces.
      'uidmap',
    ],
    aptPackages: NODE_LOGIND_PACKAGES,
    links: { [NODE_ELOGIND_PATH]: ELOGIND_BINARY[release] },
    recordVersions: [...NODE_RUNTIME_PACKAGES, 'iptables', ...NODE_LOGIND_PACKAGES],
    config: {
      entrypoint: ['/usr/bin/tini', '--'],
      cmd: ['sleep', 'infinity'],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    },
  };
}

export const RECIPES: Record<ImageName, Recipe> = {
  pause: {
    kind: 'busybox',
    name: 'pause',
    description: 'Pod sandbox image: sleeps until stopped.',
    files: {},
    config: { cmd: ['/bin/sh', '-c', `${STOP_ON_TERM}; ${FOREVER} & wait`] },
  },
  busybox: {
    kind: 'busybox',
    name: 'busybox',
    description: 'A shell and the busybox applets.',
    files: {},
    config: { cmd: ['/bin/sh'] },
  },
  httpd: {
    kind: 'busybox',
    name: 'httpd',
    description: 'busybox httpd serving /www on port 80; /healthz answers 200 while /www/healthz exists.',
    files: {
      '/www/index.html': {
        content: '<!doctype html><title>kh httpd</title><p>kubelet-harness\n',
        mode: 0o644,
      },
      '/www/healthz': { content: 'ok\n', mode: 0o644 },
    },
    config: {
      cmd: ['/bin/sh', '-c', `${STOP_ON_TERM}; httpd -f -p 80 -h /www & wait`],
      exposedPorts: ['80/tcp'],
    },
  },
  memhog: {
    kind: 'busybox',
    name: 'memhog',
    description: 'Grows its memory step by step (MEMHOG_MB, MEMHOG_STEP_MB, MEMHOG_INTERVAL_S).',
    files: { '/bin/memhog': MEMHOG },
    config: { cmd: ['/bin/memhog'] },
  },
  diskhog: {
    kind: 'busybox',
    name: 'diskhog',
    description: 'Writes files step by step (DISKHOG_MB, DISKHOG_STEP_MB, DISKHOG_INTERVAL_S, DISKHOG_DIR).',
    files: { '/bin/diskhog': DISKHOG },
    config: { cmd: ['/bin/diskhog'] },
  },
  nonroot: {
    kind: 'busybox',
    name: 'nonroot',
    description:
      'busybox whose image config names USER 1234 (a numeric non-root user), as upstream e2e nonroot.',
    files: {},
    config: { cmd: ['/bin/sh'], user: '1234' },
  },
  nonewprivs: {
    kind: 'busybox',
    name: 'nonewprivs',
    description:
      'busybox plus /usr/local/bin/nnp, a setuid-root static program printing its real and effective uid, as upstream e2e nonewprivs.',
    files: {},
    programs: { '/usr/local/bin/nnp': { source: NNP, mode: 0o4755 } },
    config: { cmd: ['/usr/local/bin/nnp'] },
  },
  usergroups: {
    kind: 'busybox',
    name: 'usergroups',
    description:
      "busybox whose /etc/group puts user-defined-in-image (uid 1000) in group-defined-in-image (gid 50000), as upstream's agnhost does for the SupplementalGroupsPolicy cases.",
    files: {
      '/etc/passwd': {
        content: `${BUSYBOX_PASSWD}user-defined-in-image:x:1000:1000::/:/bin/sh\n`,
        mode: 0o644,
      },
      '/etc/group': {
        content: `${BUSYBOX_GROUP}user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n`,
        mode: 0o644,
      },
    },
    config: { cmd: ['/bin/sh'] },
  },
  entrypoint: {
    kind: 'busybox',
    name: 'entrypoint',
    description:
      "busybox with agnhost's pause and entrypoint-tester as /agnhost and /agnhost-2 (ENTRYPOINT /agnhost, CMD pause), for upstream's Containers cases.",
    files: { '/agnhost': AGNHOST_ENTRYPOINT, '/agnhost-2': AGNHOST_ENTRYPOINT },
    config: { entrypoint: ['/agnhost'], cmd: ['pause'] },
  },
  netexec: {
    kind: 'busybox',
    name: 'netexec',
    description:
      "busybox with agnhost's pause (the default CMD), liveness (/healthz and /redirect on 8080, answered in-process), grpc-health-checking (the gRPC health service on 5000, a static Go program) and netexec (HTTP or, with --tls-cert-file, HTTPS /echo and /dial, requests logged) as /agnhost, agnhost's /localhost.crt and .key, and a curl for GETs, for upstream's lifecycle hook and probe cases.",
    files: {
      '/agnhost': NETEXEC,
      '/netexec-handler': NETEXEC_HANDLER,
      '/bin/curl': CURL,
      '/localhost.crt': { content: LOCALHOST_CRT, mode: 0o644 },
      '/localhost.key': { content: LOCALHOST_KEY, mode: 0o644 },
    },
    programs: {
      '/liveness': { source: LIVENESS, mode: 0o755 },
      '/tlsproxy': {
        source: TLSPROXY,
        mode: 0o755,
        libs: { ssl: 'libssl-dev', crypto: 'libssl-dev', pthread: 'libc6-dev' },
      },
    },
    goPrograms: { '/grpc-health-checking': { dir: 'grpc-health', mode: 0o755 } },
    config: { entrypoint: ['/agnhost'], cmd: ['pause'], exposedPorts: ['8080/tcp'] },
  },
  node: nodeRecipe(DEFAULT_NODE_RELEASE),
  'go-trixie': {
    kind: 'debootstrap',
    name: 'go-trixie',
    description:
      "Debian trixie with its Go toolchain, to build Go tools offline (vendored modules) that need a newer Go than the host's.",
    suite: 'trixie',
    variant: 'minbase',
    packages: ['golang-go', 'ca-certificates'],
    recordVersions: ['golang-go'],
    config: {
      cmd: ['go', 'version'],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    },
  },
  ...(Object.fromEntries(NODE_RELEASES.map((r) => [nodeImageName(r), nodeRecipe(r)])) as Record<
    NodeImageName,
    DebootstrapRecipe
  >),
};

export function isImageName(name: string): name is ImageName {
  return (IMAGE_NAMES as readonly string[]).includes(name);
}

export function isNodeRelease(name: string): name is NodeRelease {
  return (NODE_RELEASES as readonly string[]).includes(name);
}

/**
 * The release whose runtimes a test run drives in its nodes: KH_NODE_RELEASE, else the default.
 * An unknown name is refused rather than run as the default, which would pass for the wrong versions.
 */
export function nodeReleaseFromEnv(env: Record<string, string | undefined> = process.env): NodeRelease {
  const release = env.KH_NODE_RELEASE || DEFAULT_NODE_RELEASE;
  if (!isNodeRelease(release))
    throw new Error(`KH_NODE_RELEASE=${release}: must be one of ${NODE_RELEASES.join(', ')}`);
  return release;
}
