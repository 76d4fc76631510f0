import bcrypt from 'bcryptjs';

/** One htpasswd line with a bcrypt hash, the only scheme docker-registry's htpasswd auth accepts. */
export function htpasswdLine(username: string, password: string): string {
  if (!username || username.includes(':')) throw new Error(`Invalid registry user name "${username}"`);
  return `${username}:${bcrypt.hashSync(password, 10)}\n`;
}
