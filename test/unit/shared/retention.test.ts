import { MAX_RETENTION_DAYS, appliedRetention, invalidRetention, isRetentionDays, retentionCutoff } from '../../../lambda/shared/domain/retention.js';

describe('appliedRetention', () => {
  it('takes the organization\'s override, else its plan\'s, and keeps data of an organization with neither or without a plan', () => {
    expect(appliedRetention({ retentionDays: 30 }, { retentionDays: 3 })).toEqual({ days: 30, source: 'organization' });
    expect(appliedRetention({ retentionDays: null }, { retentionDays: 3 })).toEqual({ days: null, source: 'organization' });
    expect(appliedRetention({}, { retentionDays: 3 })).toEqual({ days: 3, source: 'plan' });
    expect(appliedRetention({}, {})).toEqual({ days: null, source: 'plan' });
    expect(appliedRetention({}, undefined)).toEqual({ days: null, source: 'plan' });
  });

  it('lowers a longer retention, or none, to the stack\'s ceiling', () => {
    expect(appliedRetention({ retentionDays: 30 }, { retentionDays: 3 }, 10)).toEqual({ days: 10, source: 'stack' });
    expect(appliedRetention({}, { retentionDays: 30 }, 10)).toEqual({ days: 10, source: 'stack' });
    expect(appliedRetention({ retentionDays: null }, { retentionDays: 3 }, 10)).toEqual({ days: 10, source: 'stack' });
    expect(appliedRetention({}, undefined, 10)).toEqual({ days: 10, source: 'stack' });
  });

  it('never lengthens a shorter retention to the ceiling, and names the organization or plan at the ceiling itself', () => {
    expect(appliedRetention({ retentionDays: 3 }, { retentionDays: 30 }, 10)).toEqual({ days: 3, source: 'organization' });
    expect(appliedRetention({}, { retentionDays: 3 }, 10)).toEqual({ days: 3, source: 'plan' });
    expect(appliedRetention({}, { retentionDays: 10 }, 10)).toEqual({ days: 10, source: 'plan' });
    expect(appliedRetention({ retentionDays: 10 }, undefined, 10)).toEqual({ days: 10, source: 'organization' });
  });
});

describe('isRetentionDays', () => {
  it.each([1, 2, 90, MAX_RETENTION_DAYS])('takes %p', (days) => expect(isRetentionDays(days)).toBe(true));
  it.each([0, -1, MAX_RETENTION_DAYS + 1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '3', null, undefined])('refuses %p', (days) => expect(isRetentionDays(days)).toBe(false));
  it('allows 100 years', () => expect(MAX_RETENTION_DAYS).toBe(36_500));
});

describe('invalidRetention', () => {
  it('names the organization\'s item before its plan\'s, with the value as stored', () => {
    expect(invalidRetention({ invalidRetention: '0' }, { invalidRetention: '-1' })).toEqual({ item: 'organization', stored: '0' });
    expect(invalidRetention({}, { invalidRetention: '-1' })).toEqual({ item: 'plan', stored: '-1' });
    expect(invalidRetention({}, {})).toBeUndefined();
    expect(invalidRetention({}, undefined)).toBeUndefined();
  });
});

describe('retentionCutoff', () => {
  it('is `days` whole days of 24 hours before now, to the millisecond', () => {
    expect(retentionCutoff(3, new Date('2026-11-28T12:00:00.123Z'))).toEqual(new Date('2026-11-25T12:00:00.123Z'));
    expect(retentionCutoff(1, new Date('2026-03-29T12:00:00.000Z'))).toEqual(new Date('2026-03-28T12:00:00.000Z'));
  });
});
