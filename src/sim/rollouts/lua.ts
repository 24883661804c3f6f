/**
 * Enough of gopher-lua's semantics to run Argo CD's resource Lua scripts as TypeScript and fail where they fail:
 * the object arrives as Lua values (JSON null is nil, arrays are tables), a script that indexes nil or compares a
 * number with nil raises a runtime error, and Argo CD hands that error on without its stack trace, as
 * `<string>:LINE: message` (util/lua/lua.go runLuaWithResourceActionParameters).
 */

export type LuaValue = unknown;
export type LuaTable = Record<string, unknown> | unknown[];

export class LuaError extends Error {
  override readonly name = 'LuaError';
  constructor(line: number | undefined, message: string) {
    super(line === undefined ? message : `<string>:${line}: ${message}`);
  }
}

export const isNil = (v: LuaValue): v is null | undefined => v === undefined || v === null;

/** Lua truthiness: only nil and false are false. */
export const truthy = (v: LuaValue): boolean => !isNil(v) && v !== false;

function typeName(v: LuaValue): string {
  if (isNil(v)) return 'nil';
  if (typeof v === 'object') return 'table';
  return typeof v;
}

/** `t.key`: nil when absent; indexing nil (or a boolean or number) is a runtime error. */
export function field(t: LuaValue, key: string, line: number): LuaValue {
  if (isNil(t) || typeof t === 'boolean' || typeof t === 'number')
    throw new LuaError(line, `attempt to index a non-table object(${typeName(t)}) with key '${key}'`);
  if (typeof t !== 'object') return undefined;
  const v = (t as Record<string, unknown>)[key];
  return v === null ? undefined : v;
}

/** `t.key = value` on a table the script reached through `path` (each step indexed as `field` does). */
export function assign(t: LuaValue, key: string, value: LuaValue, line: number): void {
  if (isNil(t) || typeof t !== 'object')
    throw new LuaError(line, `attempt to index a non-table object(${typeName(t)}) with key '${key}'`);
  if (isNil(value)) delete (t as Record<string, unknown>)[key];
  else (t as Record<string, unknown>)[key] = value;
}

/** `a == b` for the values these scripts compare (strings, numbers, booleans, nil). */
export const luaEquals = (a: LuaValue, b: LuaValue): boolean => (isNil(a) && isNil(b)) || a === b;

/** `a < b`: numbers (or two strings) only; anything else is "attempt to compare". */
export function lessThan(a: LuaValue, b: LuaValue, line: number): boolean {
  if ((typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string'))
    return a < b;
  throw new LuaError(line, `attempt to compare ${typeName(a)} with ${typeName(b)}`);
}

/** `table.getn(t)`: the length of an array table. */
export function getn(t: LuaValue, line: number): number {
  if (Array.isArray(t)) return t.length;
  if (t && typeof t === 'object') {
    let n = 0;
    while (Object.hasOwn(t, String(n + 1))) n++;
    return n;
  }
  throw new LuaError(line, `bad argument #1 to getn (table expected, got ${typeName(t)})`);
}

/** `ipairs(t)`: the array part in order. */
export function ipairs(t: LuaValue, line: number): LuaValue[] {
  if (Array.isArray(t)) return t;
  if (t && typeof t === 'object') return [];
  throw new LuaError(line, `bad argument #1 to ipairs (table expected, got ${typeName(t)})`);
}

/** `tonumber(v)`: numbers as they are; decimal, exponent and hex strings (spaces around allowed); else nil. */
export function tonumber(v: LuaValue): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  if (/^0[xX][0-9a-fA-F]+$/.test(s)) return Number.parseInt(s.slice(2), 16);
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return Number(s);
  return undefined;
}

/** `os.date("!%Y-%m-%dT%XZ")`: UTC, seconds precision. */
export function luaUtcDate(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
