/**
 * A large answer is not kept after it is read: the keep-alive connection it opened lives on in the agent's pool,
 * and must not hold the body (as text or as the bytes received) with it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HttpTransport } from '../../src/infra/http/transport.js';

const ITEMS = 20_000;
let server: http.Server;
let baseUrl: string;
let bodyBytes = 0;

beforeAll(async () => {
  const body = JSON.stringify({
    items: Array.from({ length: ITEMS }, (_, i) => ({ metadata: { name: `app-${i}` }, note: 'x'.repeat(400) })),
  });
  bodyBytes = Buffer.byteLength(body);
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** After full collections, with a turn of the event loop between them for what is freed late. */
async function collect(): Promise<NodeJS.MemoryUsage> {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  return process.memoryUsage();
}

async function readCount(transport: HttpTransport): Promise<number> {
  const res = await transport.request<{ items: unknown[] }>({ method: 'GET', path: '/api/v1/applications' });
  return res.data.items.length;
}

it('keeps neither the text nor the bytes of an answer once it is parsed and dropped', async () => {
  const transport = new HttpTransport({ baseUrl, headers: {}, timeoutMs: 10_000 });
  const before = await collect();
  // The first request opens the connection, which stays open in the pool afterwards.
  expect(await readCount(transport)).toBe(ITEMS);
  const after = await collect();
  expect(bodyBytes).toBeGreaterThan(8 * 2 ** 20);
  // Held, the body would show twice over: its bytes outside the heap and its text in it.
  expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(bodyBytes / 4);
  expect(after.heapUsed - before.heapUsed).toBeLessThan(bodyBytes / 4);
  // The connection was kept and serves the next request.
  expect(await readCount(transport)).toBe(ITEMS);
});
