import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * The subset of DynamoDB expressions the rate limiter and the tenancy store write, evaluated on a
 * plain item: conditions built from `attribute_exists`, `attribute_not_exists` and comparisons,
 * joined by AND/OR with parentheses; updates made of `SET a = :v`, `SET a = if_not_exists(a, :v)`
 * `ADD a :n` and `REMOVE a`. Anything else is refused loudly, so a model run never silently diverges from
 * DynamoDB.
 */

export type Item = Record<string, AttributeValue>;
export interface ExpressionContext {
  names?: Record<string, string>;
  values?: Record<string, AttributeValue>;
}

const TOKEN = /\s*(attribute_not_exists|attribute_exists|if_not_exists|AND|OR|<=|>=|<>|[()=<>,+]|[#:]?[A-Za-z0-9_]+)/gy;

function tokenize(expression: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expression.length) {
    if (/^\s*$/.test(expression.slice(TOKEN.lastIndex))) break;
    const match = TOKEN.exec(expression);
    if (!match?.[1]) throw new Error(`model: unsupported expression ${expression}`);
    tokens.push(match[1]);
  }
  return tokens;
}

function name(token: string, ctx: ExpressionContext): string {
  if (token.startsWith('#')) {
    const resolved = ctx.names?.[token];
    if (resolved === undefined) throw new Error(`model: undefined name ${token}`);
    return resolved;
  }
  return token;
}

function value(token: string, ctx: ExpressionContext): AttributeValue {
  const resolved = ctx.values?.[token];
  if (resolved === undefined) throw new Error(`model: undefined value ${token}`);
  return resolved;
}

function compare(left: AttributeValue | undefined, op: string, right: AttributeValue | undefined): boolean {
  if (left === undefined || right === undefined) return false;
  const a = left.N !== undefined ? Number(left.N) : left.S;
  const b = right.N !== undefined ? Number(right.N) : right.S;
  if (a === undefined || b === undefined || typeof a !== typeof b) return false;
  switch (op) {
    case '=':
      return a === b;
    case '<>':
      return a !== b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
  throw new Error(`model: unsupported comparison ${op}`);
}

/** Whether `item` (undefined when absent) satisfies the condition expression. */
export function evaluateCondition(expression: string | undefined, item: Item | undefined, ctx: ExpressionContext): boolean {
  if (!expression) return true;
  const tokens = tokenize(expression);
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (token === undefined || (expected !== undefined && token !== expected)) throw new Error(`model: bad condition ${expression}`);
    return token;
  };
  const operand = (token: string) => (token.startsWith(':') ? value(token, ctx) : item?.[name(token, ctx)]);
  const primary = (): boolean => {
    const token = take();
    if (token === '(') {
      const result = or();
      take(')');
      return result;
    }
    if (token === 'attribute_exists' || token === 'attribute_not_exists') {
      take('(');
      const path = name(take(), ctx);
      take(')');
      const exists = item !== undefined && item[path] !== undefined;
      return token === 'attribute_exists' ? exists : !exists;
    }
    const op = take();
    return compare(operand(token), op, operand(take()));
  };
  const and = (): boolean => {
    let result = primary();
    while (peek() === 'AND') {
      take();
      result = primary() && result;
    }
    return result;
  };
  const or = (): boolean => {
    let result = and();
    while (peek() === 'OR') {
      take();
      result = and() || result;
    }
    return result;
  };
  const result = or();
  if (at !== tokens.length) throw new Error(`model: bad condition ${expression}`);
  return result;
}

/** The item after applying the update expression to `item` (a new item when absent). */
export function applyUpdate(expression: string, item: Item, ctx: ExpressionContext): Item {
  const next: Item = { ...item };
  const tokens = tokenize(expression);
  let at = 0;
  let clause = '';
  const take = () => {
    const token = tokens[at++];
    if (token === undefined) throw new Error(`model: bad update ${expression}`);
    return token;
  };
  while (at < tokens.length) {
    const token = tokens[at];
    if (token === 'SET' || token === 'ADD' || token === 'REMOVE') {
      clause = token;
      at++;
      continue;
    }
    if (token === ',') {
      at++;
      continue;
    }
    const path = name(take(), ctx);
    if (clause === 'REMOVE') {
      delete next[path];
    } else if (clause === 'ADD') {
      const delta = value(take(), ctx);
      next[path] = { N: String(Number(next[path]?.N ?? 0) + Number(delta.N)) };
    } else if (clause === 'SET') {
      if (take() !== '=') throw new Error(`model: bad update ${expression}`);
      const source = take();
      if (source === 'if_not_exists') {
        if (take() !== '(') throw new Error(`model: bad update ${expression}`);
        const existing = name(take(), ctx);
        take(); // ,
        const fallback = value(take(), ctx);
        take(); // )
        next[path] = next[existing] ?? fallback;
      } else {
        next[path] = value(source, ctx);
      }
    } else {
      throw new Error(`model: unsupported update ${expression}`);
    }
  }
  return next;
}
