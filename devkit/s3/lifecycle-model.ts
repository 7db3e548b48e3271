/** A lifecycle rule of a bucket as CloudFormation holds it (`AWS::S3::Bucket` `LifecycleConfiguration.Rules`). */
export interface TemplateLifecycleRule {
  readonly Id?: string;
  readonly Status: string;
  readonly Prefix?: string;
  readonly ExpirationInDays?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * When S3 makes an object eligible for expiration under one rule: "adding the number of days specified in the rule to
 * the object creation time and rounding the resulting time to the next day midnight UTC"
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html; its example: created 1/15/2014
 * 10:30 AM UTC, 3 days, eligible 1/19/2014 00:00 UTC). An object written again is a new object: its age starts over.
 */
export function eligibleAtMs(createdAtMs: number, days: number): number {
  return (Math.floor((createdAtMs + days * DAY_MS) / DAY_MS) + 1) * DAY_MS;
}

/**
 * When the first enabled rule that matches `key` by prefix makes an object created at `createdAtMs` eligible, or
 * undefined when none expires it. A rule with no prefix matches every key; with several matching, the earliest wins.
 */
export function expiresAtMs(rules: readonly TemplateLifecycleRule[], key: string, createdAtMs: number): number | undefined {
  const times = rules
    .filter((rule) => rule.Status === 'Enabled' && rule.ExpirationInDays !== undefined && key.startsWith(rule.Prefix ?? ''))
    .map((rule) => eligibleAtMs(createdAtMs, rule.ExpirationInDays!));
  return times.length === 0 ? undefined : Math.min(...times);
}
