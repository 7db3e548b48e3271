import { spanUuid, storedTraceId, traceUuid } from '../../../lambda/shared/domain/trace-ids.js';

describe('the OTel id rule', () => {
  it('writes the trace id as the UUID it already is, and a span id after the first half of its trace id', () => {
    expect(traceUuid('5b8efff798038103d269b633813fc60c')).toBe('5b8efff7-9803-8103-d269-b633813fc60c');
    expect(spanUuid('5b8efff798038103d269b633813fc60c', 'a1b2c3d4e5f60718')).toBe('5b8efff7-9803-8103-a1b2-c3d4e5f60718');
  });

  it('is reversible: the dashes removed give the trace id, the last 16 digits the span id', () => {
    const span = spanUuid('0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331').replaceAll('-', '');
    expect(span.slice(16)).toBe('b7ad6b7169203331');
    expect(traceUuid('0af7651916cd43dd8448eb211c80319c').replaceAll('-', '')).toBe('0af7651916cd43dd8448eb211c80319c');
  });
});

describe('a trace id in its stored form', () => {
  it.each([
    ['0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b', '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b'],
    ['0639AD5E-CE3C-4E4D-9A34-1EFB185B9D8B', '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b'],
    ['5b8efff798038103d269b633813fc60c', '5b8efff7-9803-8103-d269-b633813fc60c'],
    ['5B8EFFF798038103D269B633813FC60C', '5b8efff7-9803-8103-d269-b633813fc60c'],
  ])('is %s → %s', (given, stored) => {
    expect(storedTraceId(given)).toBe(stored);
  });

  it.each(['', 'not-a-uuid', '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8', '0639ad5ece3c-4e4d-9a34-1efb185b9d8b', '{0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b}', '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b\n', 'urn:uuid:0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b', '５b8efff798038103d269b633813fc60c'])(
    'does not exist for %j',
    (given) => {
      expect(storedTraceId(given)).toBeUndefined();
    },
  );
});
