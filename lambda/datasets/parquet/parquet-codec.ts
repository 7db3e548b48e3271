import zlib from 'node:zlib';

/** A Parquet compression codec and its (synchronous) compressor. */
export interface ParquetCodec {
  codec: 'ZSTD' | 'GZIP';
  compress: (bytes: Uint8Array) => Uint8Array;
}

/** `zlib.zstdCompressSync` (Node >= 22.15; not in Node 20's types). */
export type ZstdCompressSync = (bytes: Uint8Array, options: { params: Record<number, number> }) => Uint8Array;

/** zstd's `ZSTD_c_compressionLevel` parameter (`zlib.constants.ZSTD_c_compressionLevel` where Node has zstd). */
const ZSTD_C_COMPRESSION_LEVEL = 100;

const nodeZstd = (zlib as { zstdCompressSync?: ZstdCompressSync }).zstdCompressSync;

/**
 * The codec of landed files, from node:zlib rather than hyparquet-writer's JavaScript Snappy (docs/landing.md
 * compares them): ZSTD (level 1) where node:zlib has it (Node >= 22.15, the Lambda runtimes), otherwise
 * GZIP level 1. Athena, DuckDB and Spark read both. `zstd` is injectable so that tests cover both branches
 * (`null`: as on a Node without zstd).
 */
export function parquetCodec(zstd: ZstdCompressSync | null = nodeZstd ?? null): ParquetCodec {
  if (zstd) {
    const options = { params: { [ZSTD_C_COMPRESSION_LEVEL]: 1 } };
    return { codec: 'ZSTD', compress: (bytes) => zstd(bytes, options) };
  }
  return { codec: 'GZIP', compress: (bytes) => zlib.gzipSync(bytes, { level: 1 }) };
}
