import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { UndecodableRequestError } from '../../../../../lambda/ingest/otlp/protobuf/undecodable-request-error.js';
import { WireReader } from '../../../../../lambda/ingest/otlp/protobuf/wire-reader.js';
import { MAX_JSON_CONTAINERS } from '../../../../../lambda/shared/domain/json-limits.js';
import { attempt, disagreement, seeds } from '../../../../support/otlp-decoder-differential.js';
import { otlp, tag, varint, WIRE } from '../../../../support/protobuf-bytes.js';

/*
 * The decoder over large and random inputs: seconds each, so they are not among the tests a mutation run repeats
 * for every mutant (bench/mutation-modules.ts), where the focused tests beside this file must catch what breaks.
 */

describe('the hand-written protobuf decoder against the protobufjs-generated one, fuzzed', () => {
  it('decodes seeded random mutations alike: byte flips, insertions, deletions, copies, truncations', () => {
    let state = 0x9e3779b9;
    // mulberry32: the same mutations on every run
    const random = (): number => {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const below = (n: number) => Math.floor(random() * n);
    const interesting = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x0b, 0x0c, 0x0e, 0x0f, 0x0a, 0x12, 0x2a, 0x32, 0xc0, 0xed, 0xf4];
    const mutate = (input: Buffer): Buffer => {
      let bytes = Buffer.from(input);
      for (let n = 1 + below(3); n > 0; n--) {
        const at = below(bytes.length + 1);
        switch (below(7)) {
          case 0:
            if (at < bytes.length) bytes[at] = bytes[at]! ^ (1 << below(8));
            break;
          case 1:
            if (at < bytes.length) bytes[at] = interesting[below(interesting.length)]!;
            break;
          case 2:
            bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(Array.from({ length: 1 + below(4) }, () => below(256))), bytes.subarray(at)]);
            break;
          case 3:
            bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(Math.min(bytes.length, at + 1 + below(8)))]);
            break;
          case 4: {
            const from = below(bytes.length);
            bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(from, from + 1 + below(40)), bytes.subarray(at)]);
            break;
          }
          case 5:
            bytes = bytes.subarray(0, at);
            break;
          default:
            if (at < bytes.length) bytes[at] = below(256);
        }
      }
      return bytes;
    };
    const problems: string[] = [];
    let accepted = 0;
    const mutants = 4_000;
    for (let i = 0; i < mutants; i++) {
      const [, seed] = seeds[i % seeds.length]!;
      const bytes = mutate(seed);
      const problem = disagreement(bytes);
      if (problem) problems.push(problem);
      else if (attempt(decodeExportRequest, bytes).ok) accepted++;
      if (problems.length === 3) break; // enough to tell; a mutation run pays for every mutation left
    }
    expect(problems).toEqual([]);
    // Both outcomes are exercised, not only refusals.
    expect(accepted).toBeGreaterThan(mutants / 10);
    expect(accepted).toBeLessThan(mutants - mutants / 10);
  });
});

describe('strings must be UTF-8', () => {
  it('as strictly as a fatal TextDecoder, over every 1- and 2-byte string and a sample of longer ones', () => {
    // A WHATWG decoder turns each invalid sequence into U+FFFD: bytes are UTF-8 exactly when their text encodes
    // back to them (as a fatal TextDecoder decides, without an exception per invalid sample).
    const lenient = new TextDecoder('utf-8', { ignoreBOM: true });
    const expected = (bytes: Buffer): string | undefined => {
      const text = lenient.decode(bytes);
      return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined;
    };
    const samples: Buffer[] = [];
    for (let a = 0; a < 256; a++) {
      samples.push(Buffer.from([a]));
      for (let b = 0; b < 256; b++) samples.push(Buffer.from([a, b]));
    }
    let state = 7;
    const byte = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state >>> 24;
    };
    for (let i = 0; i < 60_000; i++) {
      const lead = 0xc0 + (byte() % 0x40);
      samples.push(Buffer.from([lead, 0x80 + (byte() % 0x50), byte(), ...(i % 2 ? [0x80 + (byte() % 0x40)] : [])]));
    }
    // Each read again after 47 ASCII bytes, past the cache of short strings. One reader reads them all, one after
    // another (a refused string leaves the reader after it): a decode per sample made this test take 17 s of a
    // loaded run, and a mutation run repeats it for every mutant it covers.
    const padding = Buffer.from('x'.repeat(47));
    const texts = [...samples, ...samples.map((bytes) => Buffer.concat([padding, bytes]))];
    const body = Buffer.concat(texts.flatMap((bytes) => [varint(bytes.length), bytes]));
    const reader = new WireReader(body);
    const wrong: string[] = [];
    // Half the samples are refused: without the stack of each refusal, the loop takes a third of the time.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      for (const bytes of texts) {
        let text: string | undefined;
        try {
          text = reader.readString(body.length);
        } catch (error) {
          if (!(error instanceof UndecodableRequestError)) throw error;
          text = undefined;
        }
        if (text !== expected(bytes)) wrong.push(bytes.toString('hex'));
        if (wrong.length === 10) break;
      }
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    expect(wrong).toEqual([]);
    expect(reader.pos).toBe(body.length);
  });
});

describe('decodeExportRequest: the arrays and objects a message builds', () => {
  /** One span with one attribute: an array of `count` empty arrays, four bytes each and no bracket byte. */
  const emptyArrays = (count: number) => {
    const empty = otlp.array();
    const items = Buffer.alloc(count * (2 + empty.length));
    for (let i = 0; i < count; i++) Buffer.concat([Buffer.from([0x0a, empty.length]), empty]).copy(items, i * (2 + empty.length));
    return otlp.oneSpan(otlp.attribute('a', Buffer.concat([tag(5, WIRE.len), varint(items.length), items])));
  };

  it('refuses past MAX_JSON_CONTAINERS built, as a JSON body past that many brackets is (issue 27: 1 M empty arrays were decoded)', () => {
    const bomb = emptyArrays(MAX_JSON_CONTAINERS);
    expect(bomb.includes(0x5b) || bomb.includes(0x7b)).toBe(false);
    expect(attempt(decodeExportRequest, bomb)).toEqual({ ok: false, message: expect.stringMatching(/more than 1000000 JSON arrays and objects/) });
  });

  it('counts the brackets of every body that could hold more than MAX_JSON_CONTAINERS: one string of one more', () => {
    const withBrackets = (count: number) => otlp.oneSpan(otlp.attribute('a', otlp.string('['.repeat(count))));
    expect(withBrackets(MAX_JSON_CONTAINERS + 1).length).toBeLessThan(MAX_JSON_CONTAINERS + 64);
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS + 1))).toEqual({ ok: false, message: expect.stringMatching(/more than 1000000 JSON arrays and objects/) });
    // The span is the one container built.
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS)).ok).toBe(false);
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS - 1)).ok).toBe(true);
  });

  it('decodes the same shape below the bound', () => {
    const outcome = attempt(decodeExportRequest, emptyArrays(1_000));
    expect(outcome.ok).toBe(true);
  });
});

