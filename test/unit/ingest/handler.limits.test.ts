import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { MAX_SPANS_PER_TRACE } from '../../../lambda/ingest/core/validation/issue-codes.js';
import { JSON_TEXT_MEMBERS } from '../../../lambda/ingest/core/validation/json-text-hints.js';
import { MAX_JSON_CONTAINERS, MAX_JSON_TEXT_DEPTH } from '../../../lambda/shared/domain/json-limits.js';
import { MAX_DECODED_BODY_BYTES } from '../../../lambda/shared/request-limits.js';
import { createHarness, ddbMock, type Harness, kinesisMock, s3Mock } from '../../support/ingest-harness.js';
import { gatewayEvent, iso } from '../../../devkit/builders/trace-builders.js';

/*
 * The JSON route on values nested and sized to each of its limits (docs/api.md "Trace and span fields", docs/contract.md
 * §1 and §3) and just past them, in every member of a trace and of a span. Up to the limits a value gets the answer a
 * plain value of its shape gets (`[0]` for arrays nested a million deep); just past one it gets that limit's answer.
 * None gets a 5xx: a 503 tells a client to resend what can never succeed.
 */

const UNLIMITED = { minute: null, hour: null, day: null, month: null };

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ quotas: UNLIMITED });
});

interface Answer {
  status: number;
  code?: string;
  accepted?: number;
  rejected?: number;
  /** Each issue of the one trace as `code path`, span indices as `*` (ten thousand spans each get one), sorted. */
  issues?: string[];
}

const pattern = (pointer: string) => pointer.replace(/\/spans\/\d+/g, '/spans/*');

async function answerTo(body: string): Promise<Answer> {
  ddbMock.resetHistory();
  kinesisMock.resetHistory();
  s3Mock.resetHistory();
  const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body }));
  const parsed = JSON.parse(response.body) as { code?: string; accepted?: number; rejected?: number; errors?: { issues: { path: string; code: string }[] }[] };
  if (response.statusCode !== 200) return { status: response.statusCode, code: parsed.code };
  const issues = parsed.errors?.flatMap((error) => error.issues.map((issue) => `${issue.code} ${pattern(issue.path)}`)) ?? [];
  return { status: 200, accepted: parsed.accepted, rejected: parsed.rejected, issues: [...new Set(issues)].sort() };
}

// --- The members, with the limits the schema gives them ----------------------------------------------------------

interface MemberSchema {
  maxLength?: number;
}
const schema = JSON.parse(readFileSync(path.join(__dirname, '../../../lambda/ingest/core/validation/trace.schema.json'), 'utf8')) as {
  properties: Record<string, MemberSchema>;
  $defs: { span: { properties: Record<string, MemberSchema> } };
};

interface Member {
  name: string;
  /** JSON Pointer of the member inside the trace. */
  pointer: string;
  maxLength: number | undefined;
}

const UNKNOWN = 'x_unknown';
const members = (properties: Record<string, MemberSchema>, base: string): Member[] =>
  Object.entries<MemberSchema>({ ...properties, [UNKNOWN]: {} }).map(([name, member]) => ({ name, pointer: `${base}/${name}`, maxLength: member.maxLength }));
const MEMBERS = [...members(schema.properties, ''), ...members(schema.$defs.span.properties, '/spans/0')];

const MARK = '"@value@"';
const SPAN = { timestamp: iso(), name: 'step' };

/** The body of one valid trace with one span, `value` (JSON text) in `member`. */
function bodyWith(member: Member, value: string): string {
  const span: Record<string, unknown> = { ...SPAN };
  const trace: Record<string, unknown> = { timestamp: iso(), spans: [span] };
  (member.pointer.startsWith('/spans/0/') ? span : trace)[member.name] = JSON.parse(MARK);
  return JSON.stringify({ traces: [trace] }).replace(MARK, value);
}

// --- The shapes a value takes, each grown by a scale n ≥ 1 -------------------------------------------------------

interface Shape {
  name: string;
  /** The value's JSON text at scale `n`, of a length linear in `n`: what the limits below are solved from. */
  text(n: number, member: Member): string;
  /** A string holding JSON text nested `n` deep. */
  nestsText?: true;
  /** An array of `n` items. */
  items?: true;
}

/** The item of a long array: a span in `spans`, where the array's length has a limit of its own; elsewhere `0`. */
const itemFor = (member: Member) => (member.pointer === '/spans' ? JSON.stringify(SPAN) : '0');

const SHAPES: Shape[] = [
  { name: 'arrays nested n deep', text: (n) => `${'['.repeat(n)}0${']'.repeat(n)}` },
  { name: 'objects nested n deep', text: (n) => `${'{"a":'.repeat(n)}0${'}'.repeat(n)}` },
  { name: 'an array of n items', text: (n, member) => `[${`${itemFor(member)},`.repeat(n - 1)}${itemFor(member)}]`, items: true },
  { name: 'an object of n members', text: (n) => `{${Array.from({ length: n }, (_, i) => `"${String(i).padStart(7, '0')}":0`).join(',')}}` },
  { name: 'a string of n characters', text: (n) => `"${'x'.repeat(n)}"` },
  { name: 'a string of n emoji (4 bytes, 1 character each)', text: (n) => `"${'\u{1F600}'.repeat(n)}"` },
  { name: 'JSON text nesting arrays n deep', text: (n) => `"${'['.repeat(n)}0${']'.repeat(n)}"`, nestsText: true },
  { name: 'JSON text nesting objects n deep', text: (n) => `"${'{\\"a\\":'.repeat(n)}0${'}'.repeat(n)}"`, nestsText: true },
  { name: 'JSON text of a string of n characters', text: (n) => `"\\"${'x'.repeat(n)}\\""` },
];

const memberAt = (pointer: string) => MEMBERS.find((member) => member.pointer === pointer)!;
const shapeNamed = (name: string) => SHAPES.find((shape) => shape.name === name)!;

// --- Where a shape in a member meets its first limit ---------------------------------------------------------------

const brackets = (text: string) => text.split(/[[{]/).length - 1;
const codePoints = (text: string) => [...text].length;

/** A measure of the body, linear in `n`: solved for the largest `n` it allows. */
function largestN(measure: (n: number) => number, budget: number): number {
  const slope = measure(2) - measure(1);
  return slope <= 0 ? Infinity : Math.floor((budget - (measure(1) - slope)) / slope);
}

/** What a request just past the limit is answered: a refusal of the body, or the trace rejected with the limit's code. */
type PastLimit = { refusal: Answer } | { issue: string };

interface Limit {
  /** The largest scale still within every limit. */
  nMax: number;
  past: PastLimit;
}

function limitOf(member: Member, shape: Shape): Limit {
  const body = (n: number) => bodyWith(member, shape.text(n, member));
  const value = (n: number): unknown => JSON.parse(shape.text(n, member));
  // In the order the route checks them: the first one a growing value crosses decides the answer past it.
  const limits: { n: number; past: PastLimit }[] = [
    { n: largestN((n) => Buffer.byteLength(body(n)), MAX_DECODED_BODY_BYTES), past: { refusal: { status: 413, code: 'batch_too_large' } } },
    { n: largestN((n) => brackets(body(n)), MAX_JSON_CONTAINERS), past: { refusal: { status: 400, code: 'malformed_body' } } },
  ];
  if (typeof value(1) === 'string' && member.maxLength !== undefined) {
    limits.push({ n: largestN((n) => codePoints(value(n) as string), member.maxLength), past: { issue: `too_long ${pattern(member.pointer)}` } });
  }
  if (shape.nestsText && JSON_TEXT_MEMBERS.has(member.name)) {
    limits.push({ n: MAX_JSON_TEXT_DEPTH, past: { issue: `too_deep ${pattern(member.pointer)}` } });
  }
  if (shape.items && member.pointer === '/spans') limits.push({ n: MAX_SPANS_PER_TRACE, past: { issue: 'too_many_spans /spans' } });
  const nMax = Math.min(...limits.map((limit) => limit.n));
  return { nMax, past: limits.find((limit) => limit.n === nMax)!.past };
}

/**
 * The answer just past a limit, from the plain value's: a refusal of the body as it is; otherwise the plain value's
 * answer with the member's own issues replaced by the limit's. A request refused before validation (a
 * `workspace_slug` no workspace has: 403) is refused alike whatever the value's size.
 */
function pastAnswer(plain: Answer, past: PastLimit, member: Member): Answer {
  if ('refusal' in past) return past.refusal;
  if (plain.status !== 200) return plain;
  const own = ` ${pattern(member.pointer)}`;
  const others = (plain.issues ?? []).filter((issue) => !issue.endsWith(own));
  return { status: 200, accepted: 0, rejected: 1, issues: [...others, past.issue].sort() };
}

const plainAnswers = new Map<string, Promise<Answer>>();
const plainAnswer = (member: Member, shape: Shape) => {
  const key = `${member.pointer} ${shape.name}`;
  if (!plainAnswers.has(key)) plainAnswers.set(key, answerTo(bodyWith(member, shape.text(1, member))));
  return plainAnswers.get(key)!;
};

type Scale = 'at the limit' | 'just past it' | number;

/** `n` for a scale: the limit, one past it, or that fraction of the way to the limit on a log scale (most values small). */
const scaled = (scale: Scale, nMax: number) => (scale === 'at the limit' ? nMax : scale === 'just past it' ? nMax + 1 : Math.max(1, Math.round(nMax ** scale)));

describe('the JSON route on values nested and sized to its limits', () => {
  it('answers attributes nested 5,000 deep as it answers an empty array: 200, the trace rejected (issue 37)', async () => {
    const deep = await answerTo(`{"traces":[{"timestamp":"x","attributes":${'['.repeat(5000)}${']'.repeat(5000)}}]}`);
    const plain = await answerTo('{"traces":[{"timestamp":"x","attributes":[]}]}');
    expect(plain).toEqual({ status: 200, accepted: 0, rejected: 1, issues: ['invalid_timestamp /timestamp', 'invalid_type /attributes'] });
    expect(deep).toEqual(plain);
  });

  it('finds each limit where the code and docs put it', () => {
    const at = (pointer: string, shapeName: string) => limitOf(memberAt(pointer), shapeNamed(shapeName));
    expect(at('/user_id', 'a string of n characters')).toEqual({ nMax: 1024, past: { issue: 'too_long /user_id' } });
    expect(at('/spans/0/name', 'a string of n emoji (4 bytes, 1 character each)')).toEqual({ nMax: 1024, past: { issue: 'too_long /spans/*/name' } });
    expect(at('/spans/0/input', 'JSON text nesting objects n deep')).toEqual({ nMax: 128, past: { issue: 'too_deep /spans/*/input' } });
    expect(at('/spans', 'an array of n items')).toEqual({ nMax: 10_000, past: { issue: 'too_many_spans /spans' } });
    expect(at('/attributes', 'arrays nested n deep')).toMatchObject({ nMax: expect.any(Number), past: { refusal: { status: 400 } } });
    expect(at('/attributes', 'arrays nested n deep').nMax).toBeGreaterThan(MAX_JSON_CONTAINERS - 10);
    expect(at('/spans/0/output', 'a string of n characters').nMax).toBeGreaterThan(MAX_DECODED_BODY_BYTES - 200);
  });

  it('answers a value at every size up to each limit as a plain one of its shape, and just past it with that limit\'s answer', async () => {
    // Before the generated runs: every shape in every member, three quarters of the way to its limit on the log scale
    // (arrays nested 31,000 deep, where JSON.stringify overflowed at 5,000), and every shape at its limit and just past
    // it, in members taken in turn.
    const everywhere = MEMBERS.flatMap((member) => SHAPES.map((shape): [Member, Shape, Scale] => [member, shape, 0.75]));
    const edges = SHAPES.flatMap((shape, i): [Member, Shape, Scale][] => [
      [MEMBERS[(4 * i) % MEMBERS.length]!, shape, 'at the limit'],
      [MEMBERS[(4 * i + 19) % MEMBERS.length]!, shape, 'just past it'],
    ]);
    // And each limit of a member's own at its edges.
    const own = (
      [
        ['/spans', 'an array of n items'],
        ['/spans/0/input', 'JSON text nesting arrays n deep'],
        ['/attributes', 'JSON text nesting objects n deep'],
        ['/spans/0/name', 'a string of n emoji (4 bytes, 1 character each)'],
        ['/user_id', 'a string of n characters'],
      ] as const
    ).flatMap(([pointer, shapeName]): [Member, Shape, Scale][] => [
      [memberAt(pointer), shapeNamed(shapeName), 'at the limit'],
      [memberAt(pointer), shapeNamed(shapeName), 'just past it'],
    ]);
    const examples = [...everywhere, ...edges, ...own];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...MEMBERS),
        fc.constantFrom(...SHAPES),
        fc.oneof(fc.constant<Scale>('at the limit'), fc.constant<Scale>('just past it'), fc.double({ min: 0, max: 1, noNaN: true })),
        async (member, shape, scale) => {
          const { nMax, past } = limitOf(member, shape);
          const n = scaled(scale, nMax);
          const answer = await answerTo(bodyWith(member, shape.text(n, member)));
          expect(answer.status).toBeLessThan(500);
          const plain = await plainAnswer(member, shape);
          expect(answer).toEqual(n > nMax ? pastAnswer(plain, past, member) : plain);
        },
      ),
      { seed: 37, numRuns: examples.length + 30, examples },
    );
  });
});
