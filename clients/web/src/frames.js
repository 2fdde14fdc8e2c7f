// Decoding the server's WebSocket messages (docs/viewer.md, "WebSocket protocol"): images are
// binary messages [uint32 LE n][n bytes of JSON header][values], the values float32 ("f32") or
// binary16 times header.scale ("f16").

// Every binary16 bit pattern as a float, built once.
const HALF_TO_FLOAT = (() => {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    let value;
    if (exponent === 0) value = mantissa * 2 ** -24;
    else if (exponent === 31) value = mantissa ? NaN : Infinity;
    else value = (1 + mantissa / 1024) * 2 ** (exponent - 15);
    table[h] = sign * value;
  }
  return table;
})();

const decoder = new TextDecoder();

// -> { header, values: Float32Array }
export function decodeImageMessage(buffer) {
  const view = new DataView(buffer);
  const length = view.getUint32(0, true);
  const header = JSON.parse(decoder.decode(new Uint8Array(buffer, 4, length)));
  const offset = 4 + length;
  const count = header.count;
  let values;
  if (header.encoding === 'f16') {
    const halves = new Uint16Array(buffer, offset, count);
    values = new Float32Array(count);
    const scale = header.scale;
    for (let i = 0; i < count; i++) values[i] = HALF_TO_FLOAT[halves[i]] * scale;
  } else {
    values = new Float32Array(buffer.slice(offset, offset + 4 * count));
  }
  return { header, values };
}

export function halfToFloat(bits) {
  return HALF_TO_FLOAT[bits];
}
