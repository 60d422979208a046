// Binary traits as typed arrays, for every renderer that reads packed columns.

export const TYPES = {
  i1: Int8Array,
  u1: Uint8Array,
  i2: Int16Array,
  u2: Uint16Array,
  i4: Int32Array,
  u4: Uint32Array,
  i8: BigInt64Array,
  u8: BigUint64Array,
  f4: Float32Array,
  f8: Float64Array,
};

// An ArrayBuffer holding exactly the bytes of a trait (bytes, DataView or typed array).
export function toArrayBuffer(value) {
  if (!value) return new ArrayBuffer(0);
  if (value instanceof ArrayBuffer) return value;
  if (ArrayBuffer.isView(value)) {
    return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
  }
  return new ArrayBuffer(0);
}

// The packed record columns of a trace model: {count, columns: {name: typed array}}.
export function decodeColumns(summary, data) {
  const buffer = toArrayBuffer(data);
  const count = summary.count || 0;
  const columns = {};
  for (const [name, spec] of Object.entries(summary.layout || {})) {
    columns[name] = new TYPES[spec.dtype](buffer, spec.offset, count);
  }
  return { count, columns };
}
