import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MAX_TRACES_PER_BATCH } from '../../../lambda/ingest/json/parse-batch.js';
import { MAX_DECODED_BODY_BYTES } from '../../../lambda/shared/request-limits.js';

// Both SDKs check their defaults against sdk/conformance/limits.json; this holds that file to the service,
// so a change of the ceiling or the batch size cannot leave the SDKs forming batches the service refuses.
describe('the SDKs batch within the limits the service enforces', () => {
  const limits = JSON.parse(readFileSync(path.join(__dirname, '../../../sdk/conformance/limits.json'), 'utf8')) as Record<string, unknown>;

  it('uses the decoded request-size ceiling and the batch size of the service', () => {
    expect({ max_body_bytes: limits.max_body_bytes, max_traces_per_batch: limits.max_traces_per_batch }).toEqual({
      max_body_bytes: MAX_DECODED_BODY_BYTES,
      max_traces_per_batch: MAX_TRACES_PER_BATCH,
    });
  });
});
