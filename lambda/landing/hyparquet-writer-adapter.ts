/**
 * Everything of hyparquet-writer that is not its documented API, in one place. The version is pinned
 * (package.json) and `test/unit/landing/hyparquet-writer-contract.test.ts` pins what is relied on here;
 * upgrading the package means running that test first.
 *
 * Relied on:
 * - `writePageHeader` (src/datapage.js) and `writeRleBitPackedHybrid` (src/encoding.js), used by text-chunks.ts and list-chunks.ts;
 * - the fields of a `ParquetWriter` that parquet-writer.ts appends its own column chunks through:
 *   `writer` (the ByteWriter, with `offset`), `row_groups`, `num_rows` and `pendingIndexes` (every column chunk is ours;
 *   the ParquetWriter writes the magic, the offset indexes and the footer).
 */
import { ByteWriter, ParquetWriter, type Writer } from 'hyparquet-writer';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';

export { ByteWriter, ParquetWriter, type Writer, writePageHeader, writeRleBitPackedHybrid };
