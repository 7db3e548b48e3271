/**
 * Everything of hyparquet-writer that is not its documented API, in one place. The version is pinned
 * (package.json) and `test/unit/datasets/parquet/hyparquet-writer-contract.test.ts` pins what is relied on here;
 * upgrading the package means running that test first.
 *
 * Relied on:
 * - `writePageHeader` (src/datapage.js) and `writeRleBitPackedHybrid` (src/encoding.js), used by text-chunks.ts and list-chunks.ts;
 * - the fields of a `ParquetWriter` that parquet-writer.ts appends its own column chunks through:
 *   `writer` (the ByteWriter, with `offset`), `row_groups`, `num_rows` and `pendingIndexes` (every column chunk is ours;
 *   the ParquetWriter writes the magic, the offset indexes and the footer);
 * - a `ByteWriter`'s `index` (where the next byte goes in its buffer) apart from its `offset` (bytes written in
 *   all), and that every write appends at `index` and records positions by `offset` only, never going back to
 *   patch earlier bytes: {@link DrainingByteWriter} resets `index` to hand out what was written (the idea of
 *   hyparquet-writer's own `fileWriter` in src/node.js).
 */
import { ByteWriter, ParquetWriter, type Writer } from 'hyparquet-writer';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';

/**
 * A ByteWriter whose written bytes can be taken out while the file goes on: offsets in the file stay absolute
 * (`offset`), and the buffer only has to hold what was written since the last {@link drain}.
 */
export class DrainingByteWriter extends ByteWriter {
  /** Bytes written since the last drain. */
  get buffered(): number {
    return this.index;
  }

  /** A copy of the bytes written since the last drain, which the buffer then forgets (its capacity is kept for reuse). */
  drain(): Uint8Array {
    const bytes = new Uint8Array(this.buffer, 0, this.index).slice();
    this.index = 0;
    return bytes;
  }
}

export { ByteWriter, ParquetWriter, type Writer, writePageHeader, writeRleBitPackedHybrid };
