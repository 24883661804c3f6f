import { describe, expect, it } from 'vitest';
import { runClusters } from '../../src/commands/clusters.js';
import { parseCommand } from '../../src/commands/parse.js';
import { ctx, services, twoInstanceFleet } from './fixtures.js';

const run = (text: string) => runClusters(parseCommand(text), ctx(services(twoInstanceFleet())));

describe('clusters', () => {
  it('lists clusters per instance with connection, version, app and problem counts', async () => {
    const reply = await run('clusters');
    expect(reply.data.clusters).toEqual([
      {
        instance: 'east',
        name: 'https://unknown.example:6443',
        server: 'https://unknown.example:6443',
        connection: 'NotRegistered',
        message: 'no cluster with this name or server in Argo CD',
        serverVersion: null,
        apps: 1,
        problems: 1,
      },
      {
        instance: 'east',
        name: 'in-cluster',
        server: 'https://kubernetes.default.svc',
        connection: 'Successful',
        message: null,
        serverVersion: '1.31',
        apps: 0,
        problems: 0,
      },
      {
        instance: 'east',
        name: 'prod-us1',
        server: 'https://10.0.0.1:6443',
        connection: 'Successful',
        message: null,
        serverVersion: '1.30',
        apps: 2,
        problems: 1,
      },
      {
        instance: 'east',
        name: 'prod-us2',
        server: 'https://10.0.0.2:6443',
        connection: 'Failed',
        message: 'dial tcp 10.0.0.2:6443: i/o timeout',
        serverVersion: null,
        apps: 2,
        problems: 2,
      },
      {
        instance: 'west',
        name: 'prod-eu1',
        server: 'https://10.1.0.1:6443',
        connection: 'Successful',
        message: null,
        serverVersion: '1.29',
        apps: 2,
        problems: 0,
      },
    ]);
    const east = reply.blocks.find((b) => b.kind === 'list' && b.title === 'Instance east');
    if (east?.kind !== 'list') throw new Error('no list for east');
    // Broken clusters first (most problems first), then clusters with problem apps, then the fine ones.
    expect(east.items.map((i) => [i.text.split(' ')[0], i.tone])).toEqual([
      ['*prod-us2*', 'error'],
      ['*https://unknown.example:6443*', 'error'],
      ['*prod-us1*', 'warn'],
      ['*in-cluster*', 'ok'],
    ]);
    expect(east.items[0].detail).toBe('https://10.0.0.2:6443 — dial tcp 10.0.0.2:6443: i/o timeout');
  });

  it('narrows to one instance and rejects an unknown one with suggestions', async () => {
    const reply = await run('clusters instance=west');
    expect((reply.data.clusters as { name: string }[]).map((c) => c.name)).toEqual(['prod-eu1']);
    await expect(run('clusters instance=wset')).rejects.toMatchObject({
      code: 'unknown_target',
      suggestions: ['west'],
    });
  });
});
