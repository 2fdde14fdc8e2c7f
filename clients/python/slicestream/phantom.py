"""Spheres with exact parallel-beam line integrals: a phantom to stream from numpy and to
compare reconstructions with (examples, tests)."""
from dataclasses import dataclass

import numpy as np

from .geometry import pixel_rays


@dataclass(frozen=True)
class Sphere:
    centre: tuple  # mm
    radius: float  # mm
    density: float  # attenuation per mm (added to what overlaps)


def line_integrals(spheres, vector, rows, cols):
    """The line integral through every pixel centre of a parallel-beam projection (rows, cols)."""
    points, ray = pixel_rays(vector, rows, cols)
    total = np.zeros((rows, cols))
    for s in spheres:
        offset = np.asarray(s.centre, dtype=float) - points
        along = offset @ ray
        distance2 = np.einsum("...k,...k->...", offset, offset) - along**2
        chord = 2 * np.sqrt(np.clip(s.radius**2 - distance2, 0, None))
        total += s.density * chord
    return total


def densities(spheres, points):
    """The phantom's attenuation at world points (..., 3)."""
    points = np.asarray(points, dtype=float)
    values = np.zeros(points.shape[:-1])
    for s in spheres:
        inside = np.sum((points - np.asarray(s.centre, dtype=float)) ** 2, axis=-1) <= s.radius**2
        values += np.where(inside, s.density, 0.0)
    return values
