import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { acceptedRollbackEnd, rollbackSeen } from '../../src/domain/runbooks/actions/rollback.js';

const R6 = '2222222222222222222222222222222222222222';
const plan = { revision: R6 };
const mark = { opBefore: '2026-12-01T10:00:00Z', historyBefore: 7 };

function app(status: Application['status'], operation?: Application['operation']): Application {
  return {
    metadata: { name: 'checkout' },
    spec: { project: 'p', destination: {} },
    status,
    ...(operation ? { operation } : {}),
  };
}
const lastOp = { operation: { sync: { revision: 'old' } }, phase: 'Succeeded' as const, startedAt: mark.opBefore };

describe('rollbackSeen: did the rollback whose answer was lost reach Argo CD?', () => {
  it('ours: requested, started after the mark, or recorded in history after the mark', () => {
    expect(
      rollbackSeen(
        app({ operationState: lastOp }, { sync: { revision: R6 }, initiatedBy: { username: 'rollcall' } }),
        plan,
        mark,
      ),
    ).toBe('ours');
    expect(
      rollbackSeen(
        app({
          operationState: {
            operation: { sync: { revision: R6 } },
            phase: 'Running',
            startedAt: '2026-12-01T10:05:00Z',
          },
        }),
        plan,
        mark,
      ),
    ).toBe('ours');
    expect(
      rollbackSeen(app({ history: [{ id: 8, revision: R6, deployedAt: '2026-12-01T10:06:00Z' }] }), plan, mark),
    ).toBe('ours');
  });

  it('none: nothing new since the mark (the only answer that allows sending it again)', () => {
    expect(
      rollbackSeen(app({ operationState: lastOp, history: [{ id: 7, revision: 'old', deployedAt: 'x' }] }), plan, mark),
    ).toBe('none');
  });

  it('other: a new operation that is not ours (or an auto-sync to the same revision) leaves it unknowable, never "none"', () => {
    expect(
      rollbackSeen(
        app({
          operationState: {
            operation: { sync: { revision: 'HEAD' } },
            phase: 'Failed',
            startedAt: '2026-12-01T10:05:00Z',
          },
        }),
        plan,
        mark,
      ),
    ).toBe('other');
    expect(
      rollbackSeen(
        app({ operationState: lastOp }, { sync: { revision: R6 }, initiatedBy: { automated: true } }),
        plan,
        mark,
      ),
    ).toBe('other');
    expect(
      rollbackSeen(
        app({ operationState: lastOp, history: [{ id: 8, revision: 'HEAD', deployedAt: 'x' }] }),
        plan,
        mark,
      ),
    ).toBe('other');
  });
});

describe('acceptedRollbackEnd: has the rollback Argo CD accepted ended?', () => {
  it('ends with the phase and message of its own operation, even one that started within the same second as the last', () => {
    const failedSameSecond = {
      operation: { sync: { revision: R6 } },
      phase: 'Failed' as const,
      message: 'one or more objects failed to apply',
      startedAt: mark.opBefore,
    };
    expect(acceptedRollbackEnd(app({ operationState: failedSameSecond }), plan, mark.opBefore)).toEqual({
      phase: 'Failed',
      message: 'one or more objects failed to apply',
    });
    expect(
      acceptedRollbackEnd(
        app({
          operationState: {
            operation: { sync: { revision: R6 } },
            phase: 'Succeeded',
            startedAt: '2026-12-01T10:05:00Z',
          },
        }),
        plan,
        mark.opBefore,
      ),
    ).toEqual({ phase: 'Succeeded' });
  });

  it('is not over while the operation is requested or running, nor on the last operation read back from before', () => {
    expect(
      acceptedRollbackEnd(app({ operationState: lastOp }, { sync: { revision: R6 } }), plan, mark.opBefore),
    ).toBeUndefined();
    expect(
      acceptedRollbackEnd(
        app({
          operationState: {
            operation: { sync: { revision: R6 } },
            phase: 'Running',
            startedAt: '2026-12-01T10:05:00Z',
          },
        }),
        plan,
        mark.opBefore,
      ),
    ).toBeUndefined();
    expect(acceptedRollbackEnd(app({ operationState: lastOp }), plan, mark.opBefore)).toBeUndefined();
  });
});
