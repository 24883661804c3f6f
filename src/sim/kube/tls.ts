import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface SimTls {
  /** PEM of the CA that signed the server certificate: what a kubeconfig's certificate-authority-data carries. */
  caPem: string;
  certPem: string;
  keyPem: string;
}

function rsaPair(): { forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; pem: string } {
  // Node generates the key (native, milliseconds); forge only assembles and signs the certificates.
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  const forgePublic = forge.pki.publicKeyFromPem(
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  ) as forge.pki.rsa.PublicKey;
  return { forgeKey, publicKey: forgePublic, pem };
}

function certificate(opts: {
  subject: string;
  publicKey: forge.pki.rsa.PublicKey;
  issuer?: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey };
  selfKey: forge.pki.rsa.PrivateKey;
  ca: boolean;
  hosts?: string[];
}): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = opts.publicKey;
  // A positive serial: the first byte's high bit clear.
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 3_600_000);
  cert.validity.notAfter = new Date(now + 365 * 86_400_000);
  const subject = [
    { name: 'commonName', value: opts.subject },
    { name: 'organizationName', value: 'rollcall simulator' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(opts.issuer ? opts.issuer.cert.subject.attributes : subject);
  const extensions: Record<string, unknown>[] = [
    { name: 'basicConstraints', cA: opts.ca, critical: true },
    opts.ca
      ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ];
  if (!opts.ca) {
    extensions.push({ name: 'extKeyUsage', serverAuth: true });
    extensions.push({
      name: 'subjectAltName',
      altNames: (opts.hosts ?? []).map((h) => (/^[\d.]+$/.test(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    });
  }
  if (opts.issuer)
    extensions.push({
      name: 'authorityKeyIdentifier',
      keyIdentifier: opts.issuer.cert.generateSubjectKeyIdentifier().getBytes(),
    });
  cert.setExtensions(extensions);
  cert.sign(opts.issuer?.key ?? opts.selfKey, forge.md.sha256.create());
  return cert;
}

/**
 * A throwaway CA and a server certificate it signed for the given hosts, made when the simulator
 * starts: client-go (kubectl) sends a bearer token only over TLS, and verifies the server against the
 * CA its kubeconfig names, so the simulated Kubernetes API needs both.
 */
export function simTls(hosts: string[] = ['127.0.0.1', 'localhost']): SimTls {
  // One per process and host list: every simulator a test suite starts can share it.
  const key = hosts.join(',');
  let made = made_.get(key);
  if (!made) made_.set(key, (made = makeTls(hosts)));
  return made;
}

const made_ = new Map<string, SimTls>();

function makeTls(hosts: string[]): SimTls {
  const ca = rsaPair();
  const caCert = certificate({ subject: 'rollcall-sim-ca', publicKey: ca.publicKey, selfKey: ca.forgeKey, ca: true });
  const server = rsaPair();
  const serverCert = certificate({
    subject: 'rollcall-sim-kube',
    publicKey: server.publicKey,
    issuer: { cert: caCert, key: ca.forgeKey },
    selfKey: server.forgeKey,
    ca: false,
    hosts,
  });
  return {
    caPem: forge.pki.certificateToPem(caCert),
    certPem: forge.pki.certificateToPem(serverCert),
    keyPem: server.pem,
  };
}

/** The sealed-secrets controller signs its key's certificate itself, valid for ten years (its `--key-ttl` default). */
const KEY_CERT_VALIDITY_MS = 10 * 365 * 86_400_000;
const issued = new Map<string, string>();

/**
 * The self-signed certificate a sealed-secrets controller makes for its key pair, valid from `notBefore`.
 * The same pair and date give the same PEM (serial and signature are deterministic), so a fixture built
 * twice at one instant is the same fixture, and the fingerprints SealedSecrets carry stay stable.
 */
export function keyCertificate(keyPem: string, notBefore: Date): string {
  const id = `${createHash('sha256').update(keyPem).digest('hex')}@${notBefore.getTime()}`;
  const known = issued.get(id);
  if (known) return known;
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  // A positive serial: the first byte's high bit clear.
  cert.serialNumber = `01${createHash('sha256').update(id).digest('hex').slice(0, 30)}`;
  cert.validity.notBefore = new Date(Math.floor(notBefore.getTime() / 1000) * 1000);
  cert.validity.notAfter = new Date(cert.validity.notBefore.getTime() + KEY_CERT_VALIDITY_MS);
  const subject = [{ name: 'organizationName', value: 'sealed-secret' }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(key, forge.md.sha256.create());
  const pem = forge.pki.certificateToPem(cert);
  issued.set(id, pem);
  return pem;
}
