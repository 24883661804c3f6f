import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpTransport } from '../../src/infra/http/transport.js';

/**
 * A server that notes, for each connection, how long after its last answer the client closed it (undefined while
 * open, or when the server closed it first). `keepAliveS`: how long the server keeps an idle connection, and says so
 * in `Keep-Alive: timeout=N` as node's servers do; 0: for ever, saying nothing, as a Go server without an idle
 * timeout does.
 */
async function startServer(keepAliveS: number) {
  const closedByClientAfter: (number | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    const socket = req.socket as Socket & { n?: number };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url }));
    const answeredAt = performance.now();
    if (socket.n === undefined) {
      socket.n = closedByClientAfter.push(undefined) - 1;
      let serverClosed = false;
      socket.on('timeout', () => (serverClosed = true));
      socket.on('end', () => {
        if (!serverClosed) closedByClientAfter[socket.n!] = performance.now() - answeredAt;
      });
    }
  });
  server.keepAliveTimeout = keepAliveS * 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, closedByClientAfter };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pooled connections: the client closes an idle one before the server would', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** One request, then idle for `idleMs`: when the client closed the connection, measured from the answer. */
  async function idleConnection(keepAliveS: number, idleMs: number) {
    const { server, url, closedByClientAfter } = await startServer(keepAliveS);
    servers.push(server);
    const http = new HttpTransport({ baseUrl: url, headers: {}, timeoutMs: 5_000 });
    expect((await http.request<{ path: string }>({ method: 'GET', path: '/one' })).data).toEqual({ path: '/one' });
    await sleep(idleMs);
    return closedByClientAfter;
  }

  it('a second before the server’s announced limit, and after 4 s against a server that announces none', async () => {
    // A request sent on a connection at the moment the server closes it is reset: a sync whose answer is lost so
    // waits out its posting window. Closed by the client first, the next request opens a new connection.
    const [announced, silent] = await Promise.all([idleConnection(2, 1_600), idleConnection(0, 4_600)]);
    expect(announced).toHaveLength(1);
    expect(announced[0]).toBeGreaterThanOrEqual(900);
    expect(announced[0]).toBeLessThan(1_600);
    expect(silent).toHaveLength(1);
    expect(silent[0]).toBeGreaterThanOrEqual(3_900);
    expect(silent[0]).toBeLessThan(4_600);
  });
});
