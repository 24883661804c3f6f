import type { FixtureAccount } from '../fixture-types.js';
import { GrpcCode, SimApiError } from './errors.js';

/**
 * Enough of Argo CD's RBAC for a bot to meet its real errors: a token maps to an account whose
 * grants are `resource, action, object` triples with `*` globs (object = "<project>/<name>").
 * EnforceErr (util/rbac) words a denial "permission denied: applications, sync,
 * payments/payments-prod-eu1, sub: rollcall, iat: <RFC3339>".
 */
export interface SimAccount {
  name: string;
  /** undefined = admin: everything allowed. */
  grants?: { resource: RegExp; action: RegExp; object: RegExp }[];
  issuedAt: string;
}

const glob = (text: string) =>
  new RegExp(
    `^${text
      .trim()
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')}$`,
  );

export function accountFrom(account: FixtureAccount, issuedAt: string): SimAccount {
  return {
    name: account.name,
    issuedAt,
    grants: account.allow.map((line) => {
      const [resource, action, object] = line.split(',').map((p) => p.trim());
      if (!resource || !action || !object)
        throw new Error(`account ${account.name}: grant "${line}" is not "resource, action, object"`);
      return { resource: glob(resource), action: glob(action), object: glob(object) };
    }),
  };
}

export function allowed(account: SimAccount, resource: string, action: string, object: string): boolean {
  return (
    !account.grants ||
    account.grants.some((g) => g.resource.test(resource) && g.action.test(action) && g.object.test(object))
  );
}

export function enforce(account: SimAccount, resource: string, action: string, object: string): void {
  if (!allowed(account, resource, action, object)) {
    throw new SimApiError(
      GrpcCode.PermissionDenied,
      `permission denied: ${resource}, ${action}, ${object}, sub: ${account.name}, iat: ${account.issuedAt}`,
    );
  }
}
