import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';

export interface UserInfo {
  name: string;
  uid: string;
  groups: string[];
}

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
  /** The user a bearer token stands for (TokenReview); undefined when it is not valid. */
  authenticateToken(token: string): UserInfo | undefined;
}

/**
 * Bearer tokens from a token file. Without any token configured the server is open (the
 * embedded test mode); with tokens, a request without a valid one is 401 unless anonymous
 * access was enabled explicitly.
 */
export function tokenAuthenticator(
  tokens: Map<string, UserInfo> | undefined,
  anonymous: boolean,
): Authenticator {
  const anonymousUser: UserInfo = { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] };
  const authenticateToken = (token: string): UserInfo | undefined => {
    const user = tokens?.get(token);
    return user && { ...user, groups: [...user.groups, 'system:authenticated'] };
  };
  return {
    authenticateToken,
    authenticate(req) {
      const header = req.headers.authorization;
      if (header !== undefined) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
        const user = m ? authenticateToken(m[1]!) : undefined;
        if (user !== undefined) return { user };
        // A presented but wrong credential is refused even when anonymous access is on.
        if (tokens !== undefined) return { error: 'unauthorized' };
      }
      if (tokens === undefined || anonymous) return { user: anonymousUser };
      return { error: 'unauthorized' };
    },
  };
}
