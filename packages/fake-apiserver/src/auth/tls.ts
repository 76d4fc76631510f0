import { webcrypto } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// Node's webcrypto is the Web Crypto API the library expects; the DOM `Crypto` type is not in our lib.
x509.cryptoProvider.set(webcrypto as never);

export interface TlsMaterial {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The CA's key (PKCS#8), when this server made the CA: it then signs its kubelet client certificate. */
  caKeyPem?: string;
}

export interface ClientCertificate {
  certPem: string;
  keyPem: string;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`;
}

const serial = () =>
  Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');

/**
 * Generates a CA and a serving certificate for the given host names and IPs (loopback is always
 * included), like kube-apiserver's self-signed mode, but with a CA the kubeconfig can carry.
 */
export async function generateTls(hosts: string[] = []): Promise<TlsMaterial> {
  const now = Date.now();
  const notBefore = new Date(now - 60_000);
  const notAfter = new Date(now + 365 * 24 * 3600 * 1000);
  const caKeys = (await webcrypto.subtle.generateKey(ALG, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=fake-apiserver-ca',
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const all = [...new Set(['localhost', '127.0.0.1', '::1', 'kubernetes', 'kubernetes.default', ...hosts])];
  const isIp = (h: string) => /^[\d.]+$/.test(h) || h.includes(':');
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=kube-apiserver',
    issuer: ca.subject,
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(all.map((h) => ({ type: isIp(h) ? 'ip' : 'dns', value: h }))),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  return {
    caPem: ca.toString('pem'),
    certPem: cert.toString('pem'),
    keyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
    caKeyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', caKeys.privateKey)),
  };
}

/**
 * The TLS material kept in a data directory (tls.json): generated on the first start and read on
 * every later one, so a restarted server keeps its CA and serving certificate, as kube-apiserver
 * keeps its certificates on disk, and clients that trust the CA reconnect.
 */
export async function persistentTls(dataDir: string, hosts: string[] = []): Promise<TlsMaterial> {
  const file = join(dataDir, 'tls.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as TlsMaterial;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const tls = await generateTls(hosts);
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(tls), { mode: 0o600 });
  return tls;
}

/**
 * A client certificate signed by the CA: the subject's CN is the user name and its O entries the
 * groups, as Kubernetes' x509 authenticators read them.
 */
export async function issueClientCertificate(
  caPem: string,
  caKeyPem: string,
  commonName: string,
  organizations: string[],
): Promise<ClientCertificate> {
  const ca = new x509.X509Certificate(caPem);
  const der = Buffer.from(caKeyPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const caKey = await webcrypto.subtle.importKey('pkcs8', der, ALG, false, ['sign']);
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const rdn = (v: string) => v.replace(/([,+="<>#;\\])/g, '\\$1');
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: [`CN=${rdn(commonName)}`, ...organizations.map((o) => `O=${rdn(o)}`)].join(', '),
    issuer: ca.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * 24 * 3600 * 1000),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  return {
    certPem: cert.toString('pem'),
    keyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
  };
}
