import { PRICES } from './prices.js';

/** What one erasure does in an organization's lake, as the cost model prices it. */
export interface ErasureShape {
  /** Hours of history (30 days: 720). */
  hoursOfHistory: number;
  /** Hours holding the user's rows (1 % of them, rounded up). */
  touchedHours: number;
  /** Compacted bytes of one hour (both datasets). */
  bytesPerHour: number;
  /** Worker seconds to rewrite one hour, scaled from the bench's measured bytes per second. */
  workerSecondsPerHour: number;
  workerMemoryMb: number;
}

export interface ErasureCost {
  dollars: number;
  lines: Record<string, number>;
}

/**
 * One erasure at list prices (bench/cost/prices.ts). Finding the hours: a LIST of the index, the manifests and the
 * raw objects (1,000 keys a page), a GET per index object (two per hour). Per touched hour: the matching pass and
 * the rewrite read the compacted generation (2 GETs each), the rewrite writes 2 objects, the manifest, 2 index
 * objects and the outcome (6 PUTs), lists 6 prefixes, and one FIFO message is sent, received and deleted; the
 * worker's duration at its memory. Two planner runs read the request, the outcomes and write it twice. DELETE is free.
 */
export function erasureCost(shape: ErasureShape): ErasureCost {
  const listPages = Math.ceil((2 * shape.hoursOfHistory) / 1000) + Math.ceil(shape.hoursOfHistory / 1000) + 2;
  const lines: Record<string, number> = {
    'find hours: S3 LIST': listPages * PRICES.s3PutOrList,
    'find hours: S3 GET of the index': 2 * shape.hoursOfHistory * PRICES.s3Get,
    'rewrite: S3 GET': shape.touchedHours * 4 * PRICES.s3Get,
    'rewrite: S3 PUT and LIST': shape.touchedHours * 12 * PRICES.s3PutOrList,
    'rewrite: SQS FIFO': shape.touchedHours * 3 * PRICES.sqsFifoPerRequest,
    'rewrite: Lambda duration': shape.touchedHours * shape.workerSecondsPerHour * (shape.workerMemoryMb / 1024) * PRICES.lambdaArmPerGbSecond,
    'rewrite: Lambda requests': shape.touchedHours * PRICES.lambdaPerRequest,
    'planner: request and outcomes': 2 * (2 * PRICES.s3PutOrList + (1 + shape.touchedHours) * PRICES.s3Get),
  };
  return { dollars: Object.values(lines).reduce((sum, value) => sum + value, 0), lines };
}
