"""Scan geometries and slice orientations (docs/geometry.md): world millimetres, ASTRA's
conventions, RECAST3D's nine numbers per slice (x-axis, y-axis, base point)."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Box:
    """The reconstruction box: its lowest and highest corner in mm."""

    min: tuple
    max: tuple

    @property
    def centre(self):
        return tuple(0.5 * (a + b) for a, b in zip(self.min, self.max))

    @property
    def extent(self):
        return tuple(b - a for a, b in zip(self.min, self.max))


def axis_slice(axis, box, fraction=0.5):
    """RECAST3D's slice through `box` across `axis` ('x': the y-z plane, 'y': the x-z plane,
    'z': axial) at `fraction` of the box along that axis; the server's default slices 0, 1, 2
    are 'x', 'y', 'z' at 0.5."""
    (x0, y0, z0), (x1, y1, z1) = box.min, box.max
    w, d, h = x1 - x0, y1 - y0, z1 - z0
    if axis == "x":
        return [0, d, 0, 0, 0, h, x0 + fraction * w, y0, z0]
    if axis == "y":
        return [w, 0, 0, 0, 0, h, x0, y0 + fraction * d, z0]
    if axis == "z":
        return [w, 0, 0, 0, d, 0, x0, y0, z0 + fraction * h]
    raise ValueError(f"axis must be 'x', 'y' or 'z', not {axis!r}")


def pixel_centres(orientation, width, height):
    """World coordinates (height, width, 3) of every pixel centre of a slice, row 0 at the
    bottom: base + (i + 1/2)/W x-axis + (j + 1/2)/H y-axis."""
    o = np.asarray(orientation, dtype=float)
    x_axis, y_axis, base = o[0:3], o[3:6], o[6:9]
    u = (np.arange(width) + 0.5) / width
    v = (np.arange(height) + 0.5) / height
    return base + v[:, None, None] * y_axis + u[None, :, None] * x_axis


def parallel_vectors(angles_rad, pixel_width_mm=1.0, pixel_height_mm=1.0):
    """ASTRA parallel3d -> parallel3d_vec: ray, detector centre, u, v per angle (N, 12)."""
    a = np.asarray(angles_rad, dtype=float)
    vectors = np.zeros((a.size, 12))
    vectors[:, 0] = np.sin(a)
    vectors[:, 1] = -np.cos(a)
    vectors[:, 6] = np.cos(a) * pixel_width_mm
    vectors[:, 7] = np.sin(a) * pixel_width_mm
    vectors[:, 11] = pixel_height_mm
    return vectors


def pixel_rays(vector, rows, cols):
    """Pixel centres (rows, cols, 3) and the unit ray direction of one parallel-beam vector:
    P(row, col) = d + (col - cols/2 + 1/2) u + (row - rows/2 + 1/2) v."""
    ray, centre, u, v = (np.asarray(vector[k : k + 3], dtype=float) for k in (0, 3, 6, 9))
    c = np.arange(cols) - cols / 2 + 0.5
    r = np.arange(rows) - rows / 2 + 0.5
    points = centre + r[:, None, None] * v + c[None, :, None] * u
    return points, ray / np.linalg.norm(ray)
