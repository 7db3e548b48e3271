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
 * The codec of landed files: native node:zlib instead of hyparquet-writer's JavaScript Snappy, which was
 * the slowest step left and produced the largest files. ZSTD (level 1) where node:zlib has it, i.e. on the
 * Lambda runtimes (nodejs22.x from 22.15, nodejs24.x); otherwise (Node 20: local stack, tests) GZIP level 1,
 * which measured faster than the JS Snappy on the bench's pages and ~25% smaller. Athena, DuckDB and Spark
 * read both codecs. `zstd` is injectable so that tests cover both branches on any Node.
 */
export function parquetCodec(zstd: ZstdCompressSync | undefined = nodeZstd): ParquetCodec {
  if (zstd) {
    const options = { params: { [ZSTD_C_COMPRESSION_LEVEL]: 1 } };
    return { codec: 'ZSTD', compress: (bytes) => zstd(bytes, options) };
  }
  return { codec: 'GZIP', compress: (bytes) => zlib.gzipSync(bytes, { level: 1 }) };
}
