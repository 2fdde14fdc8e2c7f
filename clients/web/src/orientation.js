// Slice orientations: RECAST3D's nine numbers in world millimetres, [x-axis (3), y-axis (3),
// base (3)]; pixel (i, j) of a W x H slice is centred at base + (i + 1/2)/W x + (j + 1/2)/H y,
// row 0 at the bottom (docs/geometry.md). Vectors are plain arrays [x, y, z].

export const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
export const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
export const scale = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
export const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
export const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
export const norm = (a) => Math.sqrt(dot(a, a));
export const normalize = (a) => scale(a, 1 / norm(a));

export function parts(orientation) {
  const o = orientation;
  return { xAxis: [o[0], o[1], o[2]], yAxis: [o[3], o[4], o[5]], base: [o[6], o[7], o[8]] };
}

export function fromParts(xAxis, yAxis, base) {
  return [...xAxis, ...yAxis, ...base];
}

export function normal(orientation) {
  const { xAxis, yAxis } = parts(orientation);
  return normalize(cross(xAxis, yAxis));
}

// The world point at fractions (u, v) of the slice (0, 0: the base corner; 1, 1: the opposite).
export function pointAt(orientation, u, v) {
  const { xAxis, yAxis, base } = parts(orientation);
  return add(base, add(scale(xAxis, u), scale(yAxis, v)));
}

export function centre(orientation) {
  return pointAt(orientation, 0.5, 0.5);
}

// The centre of pixel (i, j) of a width x height slice.
export function pixelCentre(orientation, width, height, i, j) {
  return pointAt(orientation, (i + 0.5) / width, (j + 0.5) / height);
}

// Moved by `distance` mm along its normal.
export function translate(orientation, distance) {
  const { xAxis, yAxis, base } = parts(orientation);
  return fromParts(xAxis, yAxis, add(base, scale(normal(orientation), distance)));
}

// Rodrigues' rotation of `v` about the unit axis `k` by `angle` radians.
export function rotateVector(v, k, angle) {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  return add(add(scale(v, c), scale(cross(k, v), s)), scale(k, dot(k, v) * (1 - c)));
}

// Rotated by `angle` about the line through `point` along `axis` (the slice's shape is kept).
export function rotateAbout(orientation, point, axis, angle) {
  const k = normalize(axis);
  const { xAxis, yAxis, base } = parts(orientation);
  const newBase = add(point, rotateVector(sub(base, point), k, angle));
  return fromParts(rotateVector(xAxis, k, angle), rotateVector(yAxis, k, angle), newBase);
}

// The distance along the slice's normal that keeps its centre inside the box, nearest to `distance`.
export function clampTranslation(orientation, distance, box) {
  const c = centre(orientation);
  const n = normal(orientation);
  let low = -Infinity;
  let high = Infinity;
  for (let a = 0; a < 3; a++) {
    if (Math.abs(n[a]) < 1e-9) continue;
    const t0 = (box.min[a] - c[a]) / n[a];
    const t1 = (box.max[a] - c[a]) / n[a];
    low = Math.max(low, Math.min(t0, t1));
    high = Math.min(high, Math.max(t0, t1));
  }
  return Math.min(high, Math.max(low, distance));
}

// RECAST3D's default slices of a box: 'x' the y-z plane through the centre, 'y' the x-z plane,
// 'z' the axial x-y plane (slices 0, 1 and 2 of the server).
export function axisSlice(axis, box, offset = 0.5) {
  const [x0, y0, z0] = box.min;
  const [x1, y1, z1] = box.max;
  const w = x1 - x0;
  const d = y1 - y0;
  const h = z1 - z0;
  if (axis === 'x') return [0, d, 0, 0, 0, h, x0 + offset * w, y0, z0];
  if (axis === 'y') return [w, 0, 0, 0, 0, h, x0, y0 + offset * d, z0];
  return [w, 0, 0, 0, d, 0, x0, y0, z0 + offset * h];
}

// An axial slice as refinement wants it: both axes in the x-y plane and orthogonal.
export function isAxial(orientation, tolerance = 1e-6) {
  const { xAxis, yAxis } = parts(orientation);
  const scaleOf = Math.max(norm(xAxis), norm(yAxis));
  return Math.abs(xAxis[2]) <= tolerance * scaleOf && Math.abs(yAxis[2]) <= tolerance * scaleOf &&
    Math.abs(dot(xAxis, yAxis)) <= tolerance * scaleOf * scaleOf;
}

// Which box axis a slice's normal follows ('x', 'y', 'z'), or 'oblique'.
export function axisOf(orientation) {
  const n = normal(orientation).map(Math.abs);
  const best = n.indexOf(Math.max(...n));
  return n[best] > 1 - 1e-6 ? 'xyz'[best] : 'oblique';
}

export function sameOrientation(a, b, tolerance = 1e-4) {
  const size = Math.max(1, ...a.map(Math.abs));
  return a.length === b.length && a.every((v, i) => Math.abs(v - b[i]) <= tolerance * size);
}

// The closest point on the line p + t d to the ray o + s r: returns t (d, r need not be unit).
export function closestOnLine(p, d, o, r) {
  const w = sub(p, o);
  const a = dot(d, d);
  const b = dot(d, r);
  const c = dot(r, r);
  const e = dot(d, w);
  const f = dot(r, w);
  const den = a * c - b * b;
  if (Math.abs(den) < 1e-12 * a * c) return 0;  // parallel: no unique answer
  return (b * f - c * e) / den;
}
