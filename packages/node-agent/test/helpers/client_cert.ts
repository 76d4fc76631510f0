// Client certificates for the kubelet server's x509 authentication: a CA from the fake API
// server's generator, and leaf certificates it signs with CN (user) and O (groups).
import { webcrypto } from 'node:crypto';
import { generateTls } from '@kh/fake-apiserver';
import * as x509 from '@peculiar/x509';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface ClientIdentity {
  cert: string;
  key: string;
}

export class TestCA {
  private constructor(
    readonly pem: string,
    private readonly key: webcrypto.CryptoKey,
  ) {}

  static async create(): Promise<TestCA> {
    x509.cryptoProvider.set(webcrypto as never);
    const tls = await generateTls();
    const der = Buffer.from((tls.caKeyPem ?? '').replace(/-----[^-]+-----|\s/g, ''), 'base64');
    return new TestCA(tls.caPem, await webcrypto.subtle.importKey('pkcs8', der, ALG, false, ['sign']));
  }

  async issue(commonName: string, organizations: string[] = []): Promise<ClientIdentity> {
    const keys = (await webcrypto.subtle.generateKey(ALG, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: now.toString(16),
      subject: [`CN=${commonName}`, ...organizations.map((o) => `O=${o}`)].join(', '),
      issuer: new x509.X509Certificate(this.pem).subject,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 3600_000),
      signingAlgorithm: ALG,
      publicKey: keys.publicKey,
      signingKey: this.key,
      extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
    });
    const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
    return { cert: cert.toString('pem'), key: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
  }
}
