import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AckFirst } from '../../src/surfaces/slack/intake.js';

/** A server whose responses the test writes: a request is "waiting for its ack" until the test ends it. */
async function holdingServer(ackFirst: AckFirst) {
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => held.push(res));
  ackFirst.watch(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  return {
    held,
    fire: () => fetch(url, { method: 'POST', body: 'x' }).then((r) => r.text()),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/**
 * Two answers' steps, with I/O arriving during the first (a setImmediate): the order the three ran in. With a turn
 * per answer the I/O goes between them; in one slice both answers run first.
 */
async function twoAnswersWithIOBetween(ackFirst: AckFirst): Promise<string[]> {
  const order: string[] = [];
  const first = ackFirst.quiet().then(() => {
    order.push('first');
    setImmediate(() => order.push('between'));
  });
  const second = ackFirst.quiet().then(() => order.push('second'));
  await Promise.all([first, second]);
  return order;
}

describe('AckFirst: answers wait for the requests waiting for their ack', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('holds an answer while a request is unanswered and lets it go once the last one is', async () => {
    const ackFirst = new AckFirst(60_000);
    const s = await holdingServer(ackFirst);
    close = s.close;
    const acked = [s.fire(), s.fire()];
    await expect.poll(() => s.held.length).toBe(2);
    expect(ackFirst.pending).toBe(2);

    let answered = false;
    const answer = ackFirst.quiet().then(() => (answered = true));
    await turns(20);
    expect(answered).toBe(false);
    s.held[0].end('ok');
    await acked[0];
    await turns(20);
    expect(answered).toBe(false);
    s.held[1].end('ok');
    await acked[1];
    await answer;
    expect(ackFirst.pending).toBe(0);
  });

  it('answers at once when nothing waits, and does not starve answers behind a request that never ends', async () => {
    const ackFirst = new AckFirst(20);
    await ackFirst.quiet();
    const s = await holdingServer(ackFirst);
    close = async () => {
      s.held.forEach((r) => r.end());
      await s.close();
    };
    void s.fire();
    await expect.poll(() => s.held.length).toBe(1);
    await ackFirst.quiet();
    expect(ackFirst.pending).toBe(1);
  });

  it('gives each answer a turn of its own: I/O read between two answers goes before the second', async () => {
    const ackFirst = new AckFirst(60_000);
    expect(await twoAnswersWithIOBetween(ackFirst)).toEqual(['first', 'between', 'second']);
  });

  it('holds where answers start while requests keep arriving within the settle time, even when none is open; steps go on', async () => {
    const ackFirst = new AckFirst(60_000, 60_000);
    const s = await holdingServer(ackFirst);
    close = s.close;
    const acked = s.fire();
    await expect.poll(() => s.held.length).toBe(1);
    s.held[0].end('ok');
    await acked;
    let answered = false;
    void ackFirst.allQuiet().then(() => (answered = true));
    // A step (a hand-off, a render) is no longer than a slice: it waits only for requests still open.
    await ackFirst.quiet();
    await turns(20);
    expect(ackFirst.pending).toBe(0);
    expect(answered).toBe(false);
  });

  it('starts answers once they have waited the settle-for time, as for a stream of requests that never settles, but never while a request is open', async () => {
    const ackFirst = new AckFirst(60_000, 60_000, 0, 50);
    const s = await holdingServer(ackFirst);
    close = s.close;
    const acked = s.fire();
    await expect.poll(() => s.held.length).toBe(1);
    const asked = performance.now();
    let answeredAt: number | undefined;
    const answer = ackFirst.allQuiet().then(() => (answeredAt = performance.now()));
    await new Promise((r) => setTimeout(r, 120));
    expect(answeredAt).toBeUndefined();
    s.held[0].end('ok');
    await acked;
    await answer;
    // Another request arrived within the settle time (one minute): only the settle-for time let the answer go.
    const second = s.fire();
    await expect.poll(() => s.held.length).toBe(2);
    s.held[1].end('ok');
    await second;
    const again = performance.now();
    await ackFirst.allQuiet();
    const waited = performance.now() - again;
    expect(answeredAt! - asked).toBeGreaterThanOrEqual(120);
    expect(waited).toBeGreaterThanOrEqual(45);
    expect(waited).toBeLessThan(5_000);
  });

  it('runs the steps that fit in one slice in the same turn, but never one while a request waits for its ack', async () => {
    const ackFirst = new AckFirst(60_000, 0, 60_000);
    expect(await twoAnswersWithIOBetween(ackFirst)).toEqual(['first', 'second']);

    const s = await holdingServer(ackFirst);
    close = s.close;
    const acked = s.fire();
    await expect.poll(() => s.held.length).toBe(1);
    let answered = false;
    const answer = ackFirst.quiet().then(() => (answered = true));
    await turns(20);
    expect(answered).toBe(false);
    s.held[0].end('ok');
    await acked;
    await answer;
  });

  it('starts the answers waiting together in one turn, after the steps queued before them', async () => {
    const ackFirst = new AckFirst(60_000);
    const order: string[] = [];
    const step = ackFirst.quiet().then(() => {
      order.push('step');
      setImmediate(() => order.push('next turn'));
    });
    const answers = [1, 2, 3].map((i) =>
      ackFirst.allQuiet().then(() => {
        order.push(`answer ${i}`);
        if (i === 1) setImmediate(() => order.push('turn after the answers'));
      }),
    );
    await Promise.all([step, ...answers]);
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['step', 'next turn', 'answer 1', 'answer 2', 'answer 3', 'turn after the answers']);
  });
});
