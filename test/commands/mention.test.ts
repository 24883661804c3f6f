import { describe, expect, it } from 'vitest';
import { describePrincipals, operateDeniedMessage } from '../../src/core/access.js';
import { mention } from '../../src/core/format.js';
import { mrkdwnToText } from '../../src/views/text.js';

describe('people in messages', () => {
  it('mentions Slack user ids so Slack shows names, and leaves terminal users and groups as written', () => {
    expect(mention('U0ALICE01')).toBe('<@U0ALICE01>');
    expect(mention('W0ENTERPRISE1')).toBe('<@W0ENTERPRISE1>');
    expect(mention('terminal')).toBe('terminal');
    expect(mention('rollcall-scheduler')).toBe('rollcall-scheduler');
    expect(describePrincipals(['U0ADMIN01', 'group:sre', '*'], { sre: ['U0BOB0001', 'oncall-2'] })).toBe(
      '<@U0ADMIN01>, group:sre (<@U0BOB0001>, oncall-2), everyone',
    );
    const refusal = operateDeniedMessage('U0CAROL01', 'sync', {
      access: { groups: {}, operators: ['U0ALICE01'], admins: [], readers: [] } as never,
    });
    expect(refusal).toContain('<@U0CAROL01> is not an operator. Allowed: <@U0ALICE01>.');
    // The terminal shows them as @id.
    expect(mrkdwnToText(refusal)).toContain('@U0CAROL01 is not an operator');
  });
});
