import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import { AxiosError } from 'axios';
import { BadBodyError, HttpTransport } from '../../src/infra/http/transport.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import { actAsForwardProxy, restoreProxyEnvAfterEach, type ForwardProxy } from '../support/forward-proxy.js';

const exec = promisify(execFile);
restoreProxyEnvAfterEach();

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: http.Server | net.Server): Promise<void> {
  if ('closeAllConnections' in server) server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

describe('HttpTransport', () => {
  const requests: { url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  let argo: http.Server;
  let argoUrl: string;

  beforeAll(async () => {
    argo = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        requests.push({ url: req.url, headers: req.headers, body });
        if (req.url?.startsWith('/api/v1/gzip')) {
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(zlib.gzipSync(JSON.stringify({ items: [{ name: 'guestbook' }] })));
        } else if (req.url?.startsWith('/api/v1/silent')) {
          // Never answers: the request's idle timeout is what ends it.
        } else if (req.url?.startsWith('/api/v1/denied')) {
          res.writeHead(403, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: 'permission denied', code: 7, message: 'permission denied' }));
        } else if (req.url?.startsWith('/api/v1/cut-short')) {
          // A proxy that cut the list off but still said 200.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"items":[{"metadata":');
        } else if (req.url?.startsWith('/api/v1/html')) {
          res.writeHead(502, { 'content-type': 'text/html' });
          res.end('<html>Bad Gateway</html>');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ method: req.method, url: req.url, body: body ? JSON.parse(body) : null }));
        }
      });
    });
    argoUrl = `http://127.0.0.1:${await listen(argo)}`;
  });
  afterAll(() => close(argo));

  const transport = (timeoutMs = 2000) =>
    new HttpTransport({ baseUrl: `${argoUrl}/api/v1/`, headers: { Authorization: 'Bearer tok' }, timeoutMs });

  it('sends the query as grpc-gateway reads it and the body as JSON, and parses the answer', async () => {
    const answer = await transport().request<{ method: string; url: string; body: unknown }>({
      method: 'POST',
      path: '/applications/guestbook/sync',
      query: { projects: ['a', 'b'], empty: '', missing: undefined, dryRun: true },
      body: { prune: true },
    });
    expect(answer.status).toBe(200);
    expect(answer.data).toEqual({
      method: 'POST',
      url: '/api/v1/applications/guestbook/sync?projects=a&projects=b&dryRun=true',
      body: { prune: true },
    });
    const sent = requests.at(-1)!;
    expect(sent.headers.authorization).toBe('Bearer tok');
    expect(sent.headers['content-type']).toBe('application/json');
  });

  it('inflates a gzip answer', async () => {
    const answer = await transport().request<{ items: { name: string }[] }>({ method: 'GET', path: '/gzip' });
    expect(requests.at(-1)!.headers['accept-encoding']).toContain('gzip');
    expect(answer.data.items[0].name).toBe('guestbook');
  });

  it('fails a non-2xx answer with its status and parsed body, and keeps a non-JSON body as text', async () => {
    const denied = await transport()
      .request({ method: 'GET', path: '/denied' })
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(AxiosError);
    expect((denied as AxiosError).response).toMatchObject({
      status: 403,
      data: { code: 7, message: 'permission denied' },
    });
    const html = (await transport()
      .request({ method: 'GET', path: '/html' })
      .catch((e: unknown) => e)) as AxiosError;
    expect(html.response).toMatchObject({ status: 502, data: '<html>Bad Gateway</html>' });
  });

  it('fails a 2xx answer whose body is not JSON with BadBodyError carrying the text, instead of handing the text on as data', async () => {
    const error = await transport()
      .request({ method: 'GET', path: '/cut-short' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadBodyError);
    expect(error).toMatchObject({ status: 200, body: '{"items":[{"metadata":' });
    // Asked for text, the same body is the answer.
    await expect(
      transport().request({ method: 'GET', path: '/cut-short', responseType: 'text' }),
    ).resolves.toMatchObject({ data: '{"items":[{"metadata":' });
  });

  it('fails with ETIMEDOUT when no answer byte comes within the timeout', async () => {
    const started = Date.now();
    const error = (await transport(300)
      .request({ method: 'GET', path: '/silent' })
      .catch((e: unknown) => e)) as AxiosError;
    expect(error).toBeInstanceOf(AxiosError);
    expect(error.code).toBe('ETIMEDOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('names the connection failure: ECONNREFUSED for a port nobody listens on', async () => {
    const closed = net.createServer();
    const port = await listen(closed);
    await close(closed);
    const t = new HttpTransport({ baseUrl: `http://127.0.0.1:${port}/api/v1`, headers: {}, timeoutMs: 2000 });
    const error = (await t.request({ method: 'GET', path: '/applications' }).catch((e: unknown) => e)) as AxiosError;
    expect(error.code).toBe('ECONNREFUSED');
  });

  describe('proxies from the environment', () => {
    let proxy: http.Server;
    let proxyPort: number;
    let proxied: ForwardProxy['proxied'];
    let forward: ForwardProxy;

    beforeAll(async () => {
      proxy = http.createServer();
      forward = actAsForwardProxy(proxy);
      proxied = forward.proxied;
      proxyPort = await listen(proxy);
    });
    afterAll(async () => {
      forward.destroyTunnels();
      await close(proxy);
    });

    it('sends an http request through HTTP_PROXY with its credentials, and not when NO_PROXY names the host', async () => {
      process.env.HTTP_PROXY = `http://ops:s%3Acret@127.0.0.1:${proxyPort}`;
      proxied.length = 0;
      const answer = await transport().request<{ url: string }>({ method: 'GET', path: '/applications' });
      expect(answer.data.url).toBe('/api/v1/applications');
      expect(proxied).toEqual([
        {
          method: 'GET',
          url: `${argoUrl}/api/v1/applications`,
          auth: `Basic ${Buffer.from('ops:s:cret').toString('base64')}`,
        },
      ]);

      process.env.NO_PROXY = '127.0.0.1';
      proxied.length = 0;
      await transport().request({ method: 'GET', path: '/applications' });
      expect(proxied).toEqual([]);
    });

    /** A key and a self-signed certificate for 127.0.0.1, written to DIR/NAME-{key,cert}.pem. */
    function selfSigned(dir: string, name: string): { key: Buffer; cert: Buffer } {
      const key = path.join(dir, `${name}-key.pem`);
      const cert = path.join(dir, `${name}-cert.pem`);
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
          `/CN=${name}.test`,
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          key,
          '-out',
          cert,
        ],
        { stdio: 'ignore' },
      );
      return { key: readFileSync(key), cert: readFileSync(cert) };
    }

    const hasOpenssl = (() => {
      try {
        execFileSync('openssl', ['version'], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    })();

    it.skipIf(!hasOpenssl)(
      'tunnels https through HTTPS_PROXY and still verifies the instance against its caFile',
      async () => {
        const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-proxy-tls-'));
        const secure = https.createServer(selfSigned(dir, 'argocd'), (req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ items: [], metadata: { seen: req.url } }));
        });
        const port = await listen(secure);
        try {
          process.env.HTTPS_PROXY = `http://127.0.0.1:${proxyPort}`;
          proxied.length = 0;
          const cfg = (tls: Record<string, unknown>) =>
            instanceSchema.parse({
              name: 'secure',
              url: `https://127.0.0.1:${port}`,
              token: 'tok',
              tls,
              timeout: 2000,
            });
          const list = await new ArgoClient(cfg({ caFile: path.join(dir, 'argocd-cert.pem') }), {
            retry: { retries: 0, baseMs: 1, maxMs: 1 },
          }).listApplications();
          expect(list.metadata).toEqual({ seen: '/api/v1/applications' });
          expect(proxied).toEqual([{ method: 'CONNECT', url: `127.0.0.1:${port}`, auth: undefined }]);
          // Through the tunnel, an unknown CA is still refused.
          const refused = await new ArgoClient(cfg({}), { retry: { retries: 0, baseMs: 1, maxMs: 1 } })
            .listApplications()
            .catch((e: Error) => e);
          expect(String(refused)).toMatch(/TLS verification of Argo CD instance secure/);
        } finally {
          await close(secure);
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    // NODE_EXTRA_CA_CERTS is read when node starts, as a user trusting a company proxy sets it: a process of its own.
    it.skipIf(!hasOpenssl)(
      'goes through an https:// proxy that asks for credentials, for http and https instances alike',
      async () => {
        const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-proxy-tls-'));
        const auth = `Basic ${Buffer.from('ops:s:cret').toString('base64')}`;
        const tlsProxy = https.createServer(selfSigned(dir, 'proxy'));
        const forward = actAsForwardProxy(tlsProxy, auth);
        const secure = https.createServer(selfSigned(dir, 'argocd'), (req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ items: [], metadata: { seen: req.url } }));
        });
        const [tlsProxyPort, securePort] = [await listen(tlsProxy), await listen(secure)];
        const src = (file: string) =>
          JSON.stringify(pathToFileURL(path.resolve(import.meta.dirname, '../../src', file)).href);
        const script = `
        import { HttpTransport } from ${src('infra/http/transport.ts')};
        import { ArgoClient } from ${src('infra/argocd/client.ts')};
        import { instanceSchema } from ${src('infra/config/schema.ts')};
        const out = {};
        const settle = (p) => p.then((v) => v, (e) => ({ error: String(e) }));
        out.plain = await settle(new HttpTransport({ baseUrl: ${JSON.stringify(`${argoUrl}/api/v1`)}, headers: {}, timeoutMs: 5000 }).request({ method: 'GET', path: '/applications' }).then((a) => a.data));
        const cfg = instanceSchema.parse({ name: 'secure', url: 'https://127.0.0.1:${securePort}', token: 'tok', tls: { caFile: ${JSON.stringify(path.join(dir, 'argocd-cert.pem'))} }, timeout: 5000 });
        out.secure = await settle(new ArgoClient(cfg, { retry: { retries: 0, baseMs: 1, maxMs: 1 } }).listApplications().then((l) => l.metadata));
        process.stdout.write(JSON.stringify(out));`;
        const through = async (proxyUrl: string) => {
          const env: NodeJS.ProcessEnv = {
            ...process.env,
            HTTPS_PROXY: proxyUrl,
            HTTP_PROXY: proxyUrl,
            NODE_EXTRA_CA_CERTS: path.join(dir, 'proxy-cert.pem'),
          };
          for (const v of ['NO_PROXY', 'no_proxy', 'https_proxy', 'http_proxy', 'ALL_PROXY', 'all_proxy'])
            delete env[v];
          // Not execFileSync: the proxy and the instances answer from this process's event loop.
          const { stdout } = await exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
            env,
            encoding: 'utf8',
            timeout: 30_000,
          });
          return JSON.parse(stdout) as Record<string, unknown>;
        };
        try {
          forward.proxied.length = 0;
          expect(await through(`https://ops:s%3Acret@127.0.0.1:${tlsProxyPort}`)).toEqual({
            plain: { method: 'GET', url: '/api/v1/applications', body: null },
            secure: { seen: '/api/v1/applications' },
          });
          expect(forward.proxied).toEqual([
            { method: 'GET', url: `${argoUrl}/api/v1/applications`, auth },
            { method: 'CONNECT', url: `127.0.0.1:${securePort}`, auth },
          ]);

          // Without credentials the proxy's 407 is what the user reads, for either kind of instance.
          const refused = await through(`https://127.0.0.1:${tlsProxyPort}`);
          expect(refused.plain).toEqual({ error: expect.stringMatching(/407/) });
          expect(refused.secure).toEqual({
            error: expect.stringMatching(/proxy on the way to Argo CD instance secure asks for credentials \(HTTP 407/),
          });
        } finally {
          forward.destroyTunnels();
          await close(tlsProxy);
          await close(secure);
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
  });
});
