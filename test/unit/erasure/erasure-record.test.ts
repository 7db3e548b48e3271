import { doneRequest, InvalidErasureError, newRequest, parseRequest, rowMatcher, serializeRecord } from '../../../lambda/erasure/erasure-record.js';

const SECRET = Buffer.alloc(32, 5);
const T9 = '00000000-0000-4000-8000-000000000009';
const at = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
const row = (fields: Partial<{ trace_id: string; user_id: string; session_id: string; received_at: bigint }>) => ({ trace_id: 't0', user_id: '', session_id: '', received_at: at('2026-11-22T10:00:00Z'), ...fields });

describe('which rows an erasure request matches', () => {
  const early = newRequest('org-a', { user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [T9] }, new Date('2026-11-23T00:00:00Z'));
  const later = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-25T00:00:00Z'));

  it('matches a member of the selector received no later than the request, and nothing received after it', () => {
    const matches = rowMatcher([early], undefined);
    expect(matches(row({ user_id: 'alice' }))).toBe(true);
    expect(matches(row({ session_id: 'conv-1' }))).toBe(true);
    expect(matches(row({ trace_id: T9 }))).toBe(true);
    expect(matches(row({ user_id: 'alice', received_at: at('2026-11-23T00:00:00Z') }))).toBe(true);
    expect(matches(row({ user_id: 'alice', received_at: at('2026-11-23T00:00:00Z') + 1n }))).toBe(false);
    expect(matches(row({ user_id: 'bob' }))).toBe(false);
    // An empty id names nobody: rows without a user or session are never matched through them.
    expect(rowMatcher([newRequest('org-a', { user_ids: [''], session_ids: [''], trace_ids: [] }, new Date())], undefined)(row({}))).toBe(false);
  });

  it('matches user and session ids exactly as sent, case and Unicode form included (as erase create --help and docs/operations.md say)', () => {
    const composed = 'ren\u00e9';
    const decomposed = 're\u006e\u0065\u0301';
    const request = newRequest('org-a', { user_ids: ['Alice', composed], session_ids: ['Conv-1'], trace_ids: [] }, new Date('2026-11-23T00:00:00Z'));
    expect(request).toMatchObject({ user_ids: ['Alice', composed], session_ids: ['Conv-1'] });
    for (const secret of [undefined, SECRET]) {
      const matches = rowMatcher([secret ? doneRequest(request, secret, new Date('2026-11-23T01:00:00Z')) : request], secret);
      expect([matches(row({ user_id: 'Alice' })), matches(row({ user_id: composed })), matches(row({ session_id: 'Conv-1' }))]).toEqual([true, true, true]);
      expect([matches(row({ user_id: 'alice' })), matches(row({ user_id: 'ALICE' })), matches(row({ user_id: decomposed })), matches(row({ session_id: 'conv-1' }))]).toEqual([false, false, false, false]);
    }
  });

  it('takes, for an id named by several requests, the latest request', () => {
    for (const requests of [[early, later], [later, early]]) {
      const matches = rowMatcher(requests, undefined);
      expect(matches(row({ user_id: 'alice', received_at: at('2026-11-24T00:00:00Z') }))).toBe(true);
      expect(matches(row({ session_id: 'conv-1', received_at: at('2026-11-24T00:00:00Z') }))).toBe(false);
    }
  });

  it('matches a done request through its keyed hashes alone, and not without the secret', () => {
    const done = doneRequest(early, SECRET, new Date('2026-11-23T01:00:00Z'));
    expect(JSON.stringify(done)).not.toContain('alice');
    expect(done.selector_hmacs).toHaveLength(3);
    expect(rowMatcher([done], SECRET)(row({ user_id: 'alice' }))).toBe(true);
    expect(rowMatcher([done], SECRET)(row({ session_id: 'conv-1' }))).toBe(true);
    // A session id equal to an erased user id is another id.
    expect(rowMatcher([done], SECRET)(row({ session_id: 'alice' }))).toBe(false);
    expect(rowMatcher([done], SECRET)(row({ user_id: 'alice', received_at: at('2026-11-24T00:00:00Z') }))).toBe(false);
    expect(rowMatcher([done], Buffer.alloc(32, 6))(row({ user_id: 'alice' }))).toBe(false);
    expect(rowMatcher([done], undefined)(row({ user_id: 'alice' }))).toBe(false);
  });
});

describe('parseRequest', () => {
  /** A stored request with `erasure_id` replaced by this JSON text, and other members by these values. */
  const stored = (erasureId: string, overrides: Record<string, unknown> = {}) => {
    const request = { ...newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T00:00:00Z')), ...overrides, erasure_id: 'ID' };
    return Buffer.from(JSON.stringify(request).replace('"ID"', erasureId));
  };

  it('reads back a request as it was written', () => {
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T00:00:00Z'));
    expect(parseRequest(serializeRecord(request))).toEqual(request);
  });

  it.each([
    ['its id, when that is a string', stored('"er-1"', { status: 'lost' }), 'erasure request er-1 has another shape'],
    ['an id that is not a string by its type', stored('{"toString": 1}'), 'erasure request with erasure_id an object has another shape'],
    ['an id nested 100,000 deep', stored(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), 'erasure request with erasure_id an array of 1 item has another shape'],
  ])('refuses a request of another shape naming %s', (_, bytes, message) => {
    expect(() => parseRequest(bytes)).toThrow(new InvalidErasureError(message));
  });
});
