/** CRC-32 (IEEE 802.3, as zlib computes it) of `data`. */
export type Crc32 = (data: Uint8Array) => number;

let table: Uint32Array | undefined;

/** The table-driven CRC-32, for Node before 20.15 / 22.2, where `zlib.crc32` does not exist yet. */
export function tableCrc32(data: Uint8Array): number {
  table ??= makeTable();
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = (table[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function makeTable(): Uint32Array {
  const made = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    made[n] = c >>> 0;
  }
  return made;
}

/** `zlib.crc32` where the runtime has it (native, much faster), else the table. */
export function pickCrc32(zlib: { crc32?: (data: Uint8Array) => number } | undefined): Crc32 {
  const native = zlib?.crc32;
  return typeof native === 'function' ? (data) => native(data) : tableCrc32;
}
