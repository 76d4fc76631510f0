import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';

export interface UserInfo {
  name: string;
  uid: string;
  groups: string[];
  /** What else the authenticator knows (a service account token's pod and node). */
  extra?: Record<string, string[]>;
}

/** Who a bearer token is, and for which of the audiences asked about it is valid. */
export interface TokenAuthentication {
  user: UserInfo;
  audiences: string[];
}

/** A source of bearer tokens that checks a token's audiences (service account JWTs). */
export type AudienceAwareTokens = (token: string, audiences: string[]) => TokenAuthentication | undefined;

export const intersect = (a: readonly string[], b: readonly string[]): string[] =>
  a.filter((x, i) => b.includes(x) && a.indexOf(x) === i);

/** Parses kube-apiserver's --token-auth-file CSV: token,user,uid[,"group1,group2"]. */
export function parseTokenFile(text: string): Map<string, UserInfo> {
  const out = new Map<string, UserInfo>();
  text.split('\n').forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const fields: string[] = [];
    // Minimal CSV: a quoted field may contain commas.
    const re = /\s*("([^"]*)"|[^,]*)\s*(,|$)/g;
    let m: RegExpExecArray | null = re.exec(trimmed);
    while (m !== null && m[0] !== '') {
      fields.push(m[2] ?? m[1]!);
      if (m[3] === '') break;
      m = re.exec(trimmed);
    }
    if (fields.length < 3 || !fields[0] || !fields[1]) {
      throw new Error(`token file line ${i + 1}: expected token,user,uid[,groups]`);
    }
    const groups = (fields[3] ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter((g) => g !== '');
    out.set(fields[0], { name: fields[1], uid: fields[2]!, groups });
  });
  return out;
}

export function readTokenFile(path: string): Map<string, UserInfo> {
  return parseTokenFile(readFileSync(path, 'utf8'));
}

export type AuthResult = { user: UserInfo } | { error: 'unauthorized' };

export interface Authenticator {
  authenticate(req: IncomingMessage): AuthResult;
  /**
   * Who a bearer token is for these audiences (TokenReview; the API server's own when none are
   * given), with the audiences it is valid for; undefined when it is valid for none of them.
   */
  authenticateToken(token: string, audiences?: string[]): TokenAuthentication | undefined;
}

/**
 * Bearer tokens: those of a token file, then the service account JWTs this server issued. A
 * token-file token names no audience, so it is valid for the API server's audiences only (as
 * kube-apiserver's audience-agnostic authenticators). Without a token file the server is open
 * (the embedded test mode); with one, a request without a valid token is 401 unless anonymous
 * access was enabled explicitly.
 */
export function tokenAuthenticator(
  tokens: Map<string, UserInfo> | undefined,
  anonymous: boolean,
  opts: { apiAudiences: string[]; serviceAccounts?: AudienceAwareTokens },
): Authenticator {
  const anonymousUser: UserInfo = { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] };
  const authenticateToken = (
    token: string,
    audiences: string[] = opts.apiAudiences,
  ): TokenAuthentication | undefined => {
    const wanted = audiences.length > 0 ? audiences : opts.apiAudiences;
    const user = tokens?.get(token);
    if (user !== undefined) {
      const valid = intersect(wanted, opts.apiAudiences);
      if (valid.length === 0) return undefined;
      return { user: { ...user, groups: [...user.groups, 'system:authenticated'] }, audiences: valid };
    }
    return opts.serviceAccounts?.(token, wanted);
  };
  return {
    authenticateToken,
    authenticate(req) {
      const header = req.headers.authorization;
      if (header !== undefined) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
        const user = m ? authenticateToken(m[1]!)?.user : undefined;
        if (user !== undefined) return { user };
        // A presented but wrong credential is refused even when anonymous access is on.
        if (tokens !== undefined) return { error: 'unauthorized' };
      }
      if (tokens === undefined || anonymous) return { user: anonymousUser };
      return { error: 'unauthorized' };
    },
  };
}
