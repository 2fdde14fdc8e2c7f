// The viewer's slice geometry (clients/web/src/orientation.js) against independent arithmetic:
// moves along the normal, rotations about an edge, the box clamp, RECAST3D's default slices.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  axisSlice, centre, clampTranslation, closestOnLine, isAxial, normal, pixelCentre, pointAt,
  rotateAbout, translate,
} from '../../clients/web/src/orientation.js';

const box = { min: [-48, -48, -33], max: [48, 48, 33] };
const close = (a, b, tolerance = 1e-9) => {
  assert.equal(a.length, b.length);
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) <= tolerance, `${a} vs ${b}`));
};

test('default slices are RECAST3D\'s: x = centre, y = centre, axial z = centre', () => {
  close(axisSlice('x', box), [0, 96, 0, 0, 0, 66, 0, -48, -33]);
  close(axisSlice('y', box), [96, 0, 0, 0, 0, 66, -48, 0, -33]);
  close(axisSlice('z', box), [96, 0, 0, 0, 96, 0, -48, -48, 0]);
  close(centre(axisSlice('z', box)), [0, 0, 0]);
  assert.ok(isAxial(axisSlice('z', box)));
  assert.ok(!isAxial(axisSlice('x', box)));
});

test('pixel centres follow docs/geometry.md (row 0 at the bottom)', () => {
  const o = axisSlice('z', box);
  close(pixelCentre(o, 4, 2, 0, 0), [-48 + 12, -48 + 24, 0]);
  close(pixelCentre(o, 4, 2, 3, 1), [48 - 12, 48 - 24, 0]);
});

test('a move along the normal keeps the axes and moves every point by the distance', () => {
  const o = [10, 2, 0, -1, 5, 3, 4, 5, 6];
  const moved = translate(o, 7);
  close(moved.slice(0, 6), o.slice(0, 6));
  const n = normal(o);
  close(pointAt(moved, 0.3, 0.8), pointAt(o, 0.3, 0.8).map((v, i) => v + 7 * n[i]));
});

test('a rotation about an edge keeps that edge and the slice\'s size', () => {
  const o = axisSlice('z', box);
  const hinge = pointAt(o, 0, 0);
  const rotated = rotateAbout(o, hinge, [0, 96, 0], Math.PI / 2);
  close(pointAt(rotated, 0, 0), pointAt(o, 0, 0));
  close(pointAt(rotated, 0, 1), pointAt(o, 0, 1));
  // The far edge swings from x = +48 (z = 0) up or down to x = -48 + 0, z = -+96.
  const far = pointAt(rotated, 1, 0);
  close([far[0], far[1]], [-48, -48]);
  assert.ok(Math.abs(Math.abs(far[2]) - 96) < 1e-9);
  close(normal(rotated).map(Math.abs), [1, 0, 0]);
});

test('moves are clamped so that the slice centre stays in the box', () => {
  const o = axisSlice('z', box);
  assert.equal(clampTranslation(o, 100, box), 33);
  assert.equal(clampTranslation(o, -100, box), -33);
  assert.equal(clampTranslation(o, 5, box), 5);
});

test('the closest point on a line to a ray', () => {
  // Line: the z axis; ray from (10, 0, 4) towards -x: closest at z = 4.
  assert.ok(Math.abs(closestOnLine([0, 0, 0], [0, 0, 1], [10, 0, 4], [-1, 0, 0]) - 4) < 1e-12);
  // A skewed ray: from (5, -5, 2) along (0, 1, 0.5): closest approach at y = 0 -> z = 4.5.
  assert.ok(Math.abs(closestOnLine([0, 0, 0], [0, 0, 2], [5, -5, 2], [0, 1, 0.5]) - 2.25) < 1e-12);
});
