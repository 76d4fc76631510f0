// The kubelet's fallback serving certificate: when no tlsCertFile is configured it writes a
// self-signed one to <cert-dir>/kubelet.crt and kubelet.key, and reuses it on restart.
import { webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

export interface ServingCert {
  cert: string;
  key: string;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export async function generateSelfSignedCert(
  nodeName: string,
  altNames: string[],
  now: Date = new Date(),
): Promise<ServingCert> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const names = [...new Set([nodeName, ...altNames])];
  const notAfter = new Date(now.getTime() + 365 * 24 * 3600_000);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: now.getTime().toString(16),
    name: `CN=${nodeName}-ca@${Math.floor(now.getTime() / 1000)}`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter,
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        names.map((n) => (isIP(n) ? { type: 'ip', value: n } : { type: 'dns', value: n })),
      ),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const key = x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
  return { cert: cert.toString('pem'), key };
}

/** Loads <certDir>/kubelet.{crt,key}, creating them first when missing. */
export async function loadOrCreateServingCert(
  certDir: string,
  nodeName: string,
  altNames: string[],
): Promise<ServingCert> {
  const certPath = join(certDir, 'kubelet.crt');
  const keyPath = join(certDir, 'kubelet.key');
  try {
    return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
  } catch {
    const pair = await generateSelfSignedCert(nodeName, altNames);
    await mkdir(certDir, { recursive: true, mode: 0o700 });
    await writeFile(keyPath, pair.key, { mode: 0o600 });
    await writeFile(certPath, pair.cert, { mode: 0o644 });
    return pair;
  }
}
