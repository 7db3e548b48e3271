/** The ids a compacted generation holds, collected while it is written: what the erasure index of its hour keeps. */
export interface SeenIds {
  users: Set<string>;
  sessions: Set<string>;
  traces: Set<string>;
}

export const noneSeen = (): SeenIds => ({ users: new Set(), sessions: new Set(), traces: new Set() });
