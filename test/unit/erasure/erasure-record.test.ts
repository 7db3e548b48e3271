import { doneRequest, InvalidErasureError, newErasureId, newRequest, parseOutcome, parseRequest, rowMatcher, selectorHmac, selectorHmacs, serializeRecord } from '../../../lambda/erasure/erasure-record.js';

const SECRET = Buffer.alloc(32, 5);
const T9 = '00000000-0000-4000-8000-000000000009';
const at = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
const row = (fields: Partial<{ trace_id: string; user_id: string; session_id: string; received_at: bigint }>) => ({ trace_id: 't0', user_id: '', session_id: '', received_at: at('2026-11-22T10:00:00Z'), ...fields });

describe('which requests a row matches', () => {
  const early = newRequest('org-a', { user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [T9] }, new Date('2026-11-23T00:00:00Z'));
  const later = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-25T00:00:00Z'));
  const sessions = newRequest('org-a', { user_ids: [], session_ids: ['conv-1'], trace_ids: [] }, new Date('2026-11-23T00:00:00Z'));

  it('names a request one of whose members the row holds, received no later than the request, and none received after it', () => {
    const matching = rowMatcher([early], undefined);
    expect(matching(row({ user_id: 'alice' }))).toEqual([early.erasure_id]);
    expect(matching(row({ session_id: 'conv-1' }))).toEqual([early.erasure_id]);
    expect(matching(row({ trace_id: T9 }))).toEqual([early.erasure_id]);
    expect(matching(row({ user_id: 'alice', received_at: at('2026-11-23T00:00:00Z') }))).toEqual([early.erasure_id]);
    expect(matching(row({ user_id: 'alice', received_at: at('2026-11-23T00:00:00Z') + 1n }))).toEqual([]);
    expect(matching(row({ user_id: 'bob' }))).toEqual([]);
    // An empty id names nobody: rows without a user or session are never matched through them.
    expect(rowMatcher([newRequest('org-a', { user_ids: [''], session_ids: [''], trace_ids: [] }, new Date())], undefined)(row({}))).toEqual([]);
  });

  it('names every request the row matches, each once however many of its members the row holds', () => {
    const matching = rowMatcher([early, sessions, later], undefined);
    expect(matching(row({ user_id: 'alice', session_id: 'conv-1', trace_id: T9 }))).toEqual([early.erasure_id, later.erasure_id, sessions.erasure_id]);
    expect(matching(row({ session_id: 'conv-1' }))).toEqual([early.erasure_id, sessions.erasure_id]);
  });

  it('matches user and session ids exactly as sent, case and Unicode form included (as erase create --help and docs/operations.md say)', () => {
    const composed = 'ren\u00e9';
    const decomposed = 're\u006e\u0065\u0301';
    const request = newRequest('org-a', { user_ids: ['Alice', composed], session_ids: ['Conv-1'], trace_ids: [] }, new Date('2026-11-23T00:00:00Z'));
    expect(request).toMatchObject({ user_ids: ['Alice', composed], session_ids: ['Conv-1'] });
    for (const secret of [undefined, SECRET]) {
      const matching = rowMatcher([secret ? doneRequest(request, secret, new Date('2026-11-23T01:00:00Z')) : request], secret);
      const matched = (fields: Parameters<typeof row>[0]) => matching(row(fields)).length > 0;
      expect([matched({ user_id: 'Alice' }), matched({ user_id: composed }), matched({ session_id: 'Conv-1' })]).toEqual([true, true, true]);
      expect([matched({ user_id: 'alice' }), matched({ user_id: 'ALICE' }), matched({ user_id: decomposed }), matched({ session_id: 'conv-1' })]).toEqual([false, false, false, false]);
    }
  });

  it('for an id named by several requests, names those whose time the row was received by', () => {
    for (const requests of [[early, later], [later, early]]) {
      const matching = rowMatcher(requests, undefined);
      expect(matching(row({ user_id: 'alice', received_at: at('2026-11-24T00:00:00Z') }))).toEqual([later.erasure_id]);
      expect(matching(row({ session_id: 'conv-1', received_at: at('2026-11-24T00:00:00Z') }))).toEqual([]);
    }
  });

  it('matches a done request through its keyed hashes alone, and not without the secret', () => {
    const done = doneRequest(early, SECRET, new Date('2026-11-23T01:00:00Z'));
    expect(JSON.stringify(done)).not.toContain('alice');
    expect(done.selector_hmacs).toHaveLength(3);
    expect(rowMatcher([done], SECRET)(row({ user_id: 'alice' }))).toEqual([early.erasure_id]);
    expect(rowMatcher([done], SECRET)(row({ session_id: 'conv-1' }))).toEqual([early.erasure_id]);
    // A session id equal to an erased user id is another id.
    expect(rowMatcher([done], SECRET)(row({ session_id: 'alice' }))).toEqual([]);
    expect(rowMatcher([done], SECRET)(row({ user_id: 'alice', received_at: at('2026-11-24T00:00:00Z') }))).toEqual([]);
    expect(rowMatcher([done], Buffer.alloc(32, 6))(row({ user_id: 'alice' }))).toEqual([]);
    expect(rowMatcher([done], undefined)(row({ user_id: 'alice' }))).toEqual([]);
    expect(rowMatcher([done, later], SECRET)(row({ user_id: 'alice' }))).toEqual([later.erasure_id, early.erasure_id]);
  });
});

describe('a request\'s selector', () => {
  it('matches a request naming two kinds of ids, by either', () => {
    for (const selector of [
      { user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [] },
      { user_ids: ['alice'], session_ids: [], trace_ids: [T9] },
      { user_ids: [], session_ids: ['conv-1'], trace_ids: [T9] },
    ]) {
      const matches = rowMatcher([newRequest('org-a', selector, new Date('2026-11-23T00:00:00Z'))], undefined);
      const named = [...selector.user_ids.map((user_id) => row({ user_id })), ...selector.session_ids.map((session_id) => row({ session_id })), ...selector.trace_ids.map((trace_id) => row({ trace_id }))];
      const [request] = matches(named[0]!);
      expect(named.map(matches)).toEqual([[request], [request]]);
      expect(request).toMatch(/^er_/);
      expect(matches(row({ user_id: 'bob', session_id: 'conv-2' }))).toEqual([]);
    }
  });

  it('is kept deduplicated and sorted, with trace ids in their stored form, no hashes and no hours while pending', () => {
    const request = newRequest('org-a', { user_ids: ['bob', 'alice', 'bob'], session_ids: ['s-2', 's-1', 's-2'], trace_ids: [T9.toUpperCase(), T9] }, new Date('2026-11-23T00:00:00.123Z'), 'er_x');
    expect(request).toEqual({
      version: 1,
      erasure_id: 'er_x',
      org_id: 'org-a',
      status: 'pending',
      requested_at: '2026-11-23T00:00:00.123Z',
      requested_at_micros: Date.parse('2026-11-23T00:00:00.123Z') * 1000,
      user_ids: ['alice', 'bob'],
      session_ids: ['s-1', 's-2'],
      trace_ids: [T9],
      selector_hmacs: [],
    });
    expect(newErasureId()).toMatch(/^er_[0-9a-f]{32}$/);
  });

  it('refuses a trace id that is neither a UUID nor 32 hex digits, quoting its first 80 characters', () => {
    const long = `x${'y'.repeat(100)}`;
    expect(() => newRequest('org-a', { user_ids: [], session_ids: [], trace_ids: [long] }, new Date())).toThrow(
      new InvalidErasureError(`'${long.slice(0, 80)}' is not a trace id: give a UUID (0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b) or the 32 hex digits of an OpenTelemetry trace id (0639ad5ece3c4e4d9a341efb185b9d8b), in either case`),
    );
    expect(new InvalidErasureError('x').name).toBe('InvalidErasureError');
  });

  it('is replaced, once done, by its keyed hashes, sorted, and empty id lists', () => {
    const request = newRequest('org-a', { user_ids: ['zed', 'alice'], session_ids: ['conv-1'], trace_ids: [T9] }, new Date('2026-11-23T00:00:00Z'));
    const expected = [selectorHmac(SECRET, 'user', 'zed'), selectorHmac(SECRET, 'user', 'alice'), selectorHmac(SECRET, 'session', 'conv-1'), selectorHmac(SECRET, 'trace', T9)].sort();
    expect(selectorHmacs(SECRET, request)).toEqual(expected);
    expect(doneRequest(request, SECRET, new Date('2026-11-23T01:00:00Z'))).toEqual({ ...request, status: 'done', done_at: '2026-11-23T01:00:00.000Z', selector_hmacs: expected, user_ids: [], session_ids: [], trace_ids: [] });
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

  it.each([
    ['another version', { version: 2 }],
    ['an organization that is not a string', { org_id: 5 }],
    ['an unknown status', { status: 'lost' }],
    ['requested_at_micros that is not a number', { requested_at_micros: '1' }],
    ['user ids that are not a list', { user_ids: 'alice' }],
    ['user ids that are not all strings', { user_ids: ['alice', 1] }],
    ['session ids that are not a list', { session_ids: null }],
    ['trace ids that are not all strings', { trace_ids: [null] }],
    ['hashes that are not a list', { selector_hmacs: {} }],
    ['hours that are not a list', { hours: '2026-11-22/10' }],
    ['hours that are not all strings', { hours: [10] }],
  ])('refuses a request with %s', (_, overrides) => {
    expect(() => parseRequest(stored('"er-1"', overrides))).toThrow(new InvalidErasureError('erasure request er-1 has another shape'));
  });

  it('reads a running request with its hours, and refuses bytes that are not JSON, keeping the parser\'s error', () => {
    const running = { ...newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T00:00:00Z')), status: 'running' as const, hours: ['2026-11-22/10'] };
    expect(parseRequest(serializeRecord(running))).toEqual(running);
    let caught: unknown;
    try {
      parseRequest(Buffer.from('{"version":'));
    } catch (error) {
      caught = error;
    }
    expect(caught).toEqual(new InvalidErasureError('erasure request is not JSON'));
    expect((caught as Error).cause).toBeInstanceOf(SyntaxError);
  });
});

describe('parseOutcome', () => {
  const outcome = { erasure_id: 'er-1', hour: '2026-11-22/10', rows_removed: 3, bytes_rewritten: 10, bytes_of_hour: 20, objects_deleted: 1, done_at: '2026-11-23T00:00:00.000Z' };

  it('reads back an outcome as it was written', () => {
    expect(parseOutcome(serializeRecord(outcome))).toEqual(outcome);
  });

  it.each([
    ['no hour', { hour: undefined }],
    ['rows removed as text', { rows_removed: '3' }],
    ['no bytes rewritten', { bytes_rewritten: undefined }],
  ])('refuses an outcome with %s', (_, overrides) => {
    expect(() => parseOutcome(Buffer.from(JSON.stringify({ ...outcome, ...overrides })))).toThrow(new InvalidErasureError('erasure outcome has another shape'));
  });
});
