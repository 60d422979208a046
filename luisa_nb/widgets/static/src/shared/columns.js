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

// Hazard summaries from packed columns (luisa_nb/views/packed_hazards.py): the objects
// {index, group, kind, command_ids, upload, arrow: {from, to} | null} a JSON list holds.
export function decodeHazards(layout, data) {
  const buffer = toArrayBuffer(data);
  const count = layout.count || 0;
  const column = {};
  for (const [name, spec] of Object.entries(layout.columns || {})) {
    column[name] = new TYPES[spec.dtype](buffer, spec.offset, spec.length);
  }
  const end = (side, index) => ({
    lane: column[`${side}_lane`][index],
    time: column[`${side}_time`][index],
    command: column[`${side}_command`][index],
    label: layout.labels[column[`${side}_label`][index]],
  });
  const hazards = new Array(count);
  for (let index = 0; index < count; index++) {
    const first = column.ids_from[index];
    const group = column.group[index];
    const upload = column.upload[index];
    hazards[index] = {
      index,
      group: group < 0 ? null : group,
      kind: layout.kinds[column.kind[index]],
      command_ids: Array.from(column.ids.subarray(first, first + column.ids_count[index])),
      upload: upload < 0 ? null : upload,
      arrow: column.arrow[index] ? { from: end("from", index), to: end("to", index) } : null,
    };
  }
  return hazards;
}

const decodedHazards = new WeakMap();

// The hazards of a trace model: decoded once from its packed columns (hazard_data, laid
// out as hazard_layout says: a live widget), else its JSON list (a static page).
export function modelHazards(model) {
  const layout = model.get("hazard_layout");
  const data = model.get("hazard_data");
  if (!layout || layout.count === undefined || !data || typeof data !== "object") {
    return model.get("hazards") || [];
  }
  if (!decodedHazards.has(data)) decodedHazards.set(data, decodeHazards(layout, data));
  return decodedHazards.get(data);
}
