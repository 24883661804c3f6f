import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import { ArgoError } from '../../src/infra/argocd/errors.js';
import { instanceSchema } from '../../src/infra/config/schema.js';

let hasOpenssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  hasOpenssl = false;
}

describe.skipIf(!hasOpenssl)('TLS options', () => {
  let dir: string;
  let server: https.Server;
  let url: string;
  let connections = 0;
  const seen: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=argocd.test',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    server = https.createServer(
      { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) },
      (req, res) => {
        seen.push(`${req.url} ${req.headers.authorization}`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ items: [] }));
      },
    );
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/argocd`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const client = (tls: Record<string, unknown>) =>
    new ArgoClient(instanceSchema.parse({ name: 'secure', url, token: 'tok', tls, timeout: 2000 }), {
      retry: { retries: 3, baseMs: 1, maxMs: 2 },
    });

  it('rejects an unknown CA with a message naming tls.caFile, without retrying', async () => {
    const error = await client({})
      .listClusters()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArgoError);
    expect((error as ArgoError).kind).toBe('network');
    expect((error as ArgoError).message).toContain('TLS verification of Argo CD instance secure');
    expect((error as ArgoError).message).toContain('tls.caFile');
    expect(connections).toBe(1);
  });

  it('trusts the CA from tls.caFile', async () => {
    await expect(client({ caFile: path.join(dir, 'cert.pem') }).listClusters()).resolves.toEqual({
      metadata: {},
      items: [],
    });
    expect(seen.at(-1)).toBe('/argocd/api/v1/clusters Bearer tok');
  });

  it('skips verification when insecureSkipVerify is set', async () => {
    await expect(client({ insecureSkipVerify: true }).listClusters()).resolves.toMatchObject({ items: [] });
  });
});
