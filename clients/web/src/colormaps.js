// Colour maps as 256-entry RGB tables, interpolated from anchor colours (matplotlib's perceptually
// uniform maps, sampled at nine points).
const ANCHORS = {
  gray: [[0, 0, 0], [255, 255, 255]],
  viridis: [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
    [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]],
  magma: [[0, 0, 4], [28, 16, 68], [79, 18, 123], [129, 37, 129], [181, 54, 122],
    [229, 80, 100], [251, 135, 97], [254, 194, 135], [252, 253, 191]],
  inferno: [[0, 0, 4], [31, 12, 72], [85, 15, 109], [136, 34, 106], [186, 54, 85],
    [227, 89, 51], [249, 140, 10], [249, 201, 50], [252, 255, 164]],
  // Diverging, for values around zero (e.g. a difference).
  coolwarm: [[59, 76, 192], [98, 130, 234], [141, 176, 254], [184, 208, 249], [221, 221, 221],
    [245, 196, 173], [244, 154, 123], [222, 96, 77], [180, 4, 38]],
};

export const COLORMAP_NAMES = Object.keys(ANCHORS);

const cache = new Map();

// -> Uint8Array(256 * 3)
export function colormap(name) {
  if (cache.has(name)) return cache.get(name);
  const anchors = ANCHORS[name] || ANCHORS.gray;
  const table = new Uint8Array(256 * 3);
  for (let i = 0; i < 256; i++) {
    const position = (i / 255) * (anchors.length - 1);
    const k = Math.min(anchors.length - 2, Math.floor(position));
    const t = position - k;
    for (let c = 0; c < 3; c++) {
      table[3 * i + c] = Math.round(anchors[k][c] * (1 - t) + anchors[k + 1][c] * t);
    }
  }
  cache.set(name, table);
  return table;
}

// Writes the colour of every value into `rgba`. Slices store row 0 at the bottom: `upright`
// puts their last row first (a canvas), otherwise row 0 stays first (a WebGL texture, v = 0).
export function colorize(values, width, height, lut, low, high, rgba, upright = true) {
  const span = high > low ? high - low : 1;
  for (let j = 0; j < height; j++) {
    const source = (upright ? height - 1 - j : j) * width;
    const target = j * width * 4;
    for (let i = 0; i < width; i++) {
      const v = values[source + i];
      let k = Number.isFinite(v) ? Math.round(((v - low) / span) * 255) : 0;
      k = k < 0 ? 0 : k > 255 ? 255 : k;
      const o = target + 4 * i;
      rgba[o] = lut[3 * k];
      rgba[o + 1] = lut[3 * k + 1];
      rgba[o + 2] = lut[3 * k + 2];
      rgba[o + 3] = 255;
    }
  }
}
