import http from 'node:http';
import net from 'node:net';
import { afterEach } from 'vitest';

export interface ForwardProxy {
  /** Every request the proxy saw: absolute-URI requests (http targets) and CONNECTs (tunnels), with their credentials. */
  proxied: { method?: string; url?: string; auth?: string }[];
  /** Ends the tunnels, which are no longer the server's to close. */
  destroyTunnels(): void;
}

/**
 * Makes `server` (http or https) a forward proxy as squid is one: absolute-URI requests for http targets, CONNECT
 * tunnels for https. With `requireAuth` (a whole Proxy-Authorization value), anything else is answered 407.
 */
export function actAsForwardProxy(server: http.Server, requireAuth?: string): ForwardProxy {
  const proxied: ForwardProxy['proxied'] = [];
  const tunnels: net.Socket[] = [];
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    proxied.push({ method: req.method, url: req.url, auth: req.headers['proxy-authorization'] });
    if (requireAuth && req.headers['proxy-authorization'] !== requireAuth) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="proxy"' }).end();
      return;
    }
    const target = new URL(req.url!);
    const upstream = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode!, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    proxied.push({ method: req.method, url: req.url, auth: req.headers['proxy-authorization'] });
    tunnels.push(socket);
    if (requireAuth && req.headers['proxy-authorization'] !== requireAuth) {
      socket.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    const [host, port] = req.url!.split(':');
    const upstream = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      tunnels.push(upstream);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  return { proxied, destroyTunnels: () => tunnels.forEach((s) => s.destroy()) };
}

/** The variables that name a proxy (or exempt hosts from it), as the clients under test read them. */
export const PROXY_VARIABLES = [
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'ALL_PROXY',
  'all_proxy',
  'NO_PROXY',
  'no_proxy',
];

/** Tests set proxy variables in this process: after each one they are put back as they were. */
export function restoreProxyEnvAfterEach(): void {
  const saved = Object.fromEntries(PROXY_VARIABLES.map((v) => [v, process.env[v]]));
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}
