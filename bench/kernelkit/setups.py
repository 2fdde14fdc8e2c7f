"""The three quasi-3D set-ups exactly as bench/cuda/bench_scene.cu defines them.

Detector (rows x cols), slice side and projections per window of the KernelKit paper's Table 1;
a cone-beam window of 180 degrees (angle pi p / N), source and detector each 3 x slice side from
the rotation axis, 2 mm detector pixels (1 mm at the axis); the three orthogonal slices of
RECAST3D's defaults through a box of slice side x slice side x rows (1 mm voxels); random smooth
projections (the same generator as bench_scene.cu's smooth_random_kernel).

Every function that touches arrays takes the array module `xp` (numpy or cupy).
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Setup:
    name: str
    rows: int
    cols: int
    slice_side: int
    projections: int
    # The tuned KernelKit kernel time on an H100 that the first CUDA issue quoted (not measured
    # here), kept beside what this runner measures.
    quoted_kernelkit_ms: float


SETUPS = {
    s.name: s
    for s in (
        Setup("flexray", 400, 600, 400, 75, 0.101),
        Setup("highspeed", 1024, 1024, 1024, 128, 0.806),
        Setup("tomobank", 2016, 1800, 2016, 300, 6.79),
    )
}

PIXEL_MM = 2.0  # detector pixel pitch; the magnification 2 makes it 1 mm at the axis


@dataclass(frozen=True)
class ConeVectors:
    """ASTRA cone_vec geometry, one row per projection, in mm: source s, detector centre d, and
    the pixel steps u (column + 1) and v (row + 1)."""

    source: np.ndarray
    detector: np.ndarray
    u: np.ndarray
    v: np.ndarray


def cone_vectors(setup: Setup) -> ConeVectors:
    """bench_scene.cu's setup_geometry for cone beam (geometry.cpp's cone_vector)."""
    angles = np.pi * np.arange(setup.projections) / setup.projections
    s, c = np.sin(angles), np.cos(angles)
    zero = np.zeros_like(angles)
    distance = 3.0 * setup.slice_side
    return ConeVectors(
        source=np.stack([s * distance, -c * distance, zero], axis=1),
        detector=np.stack([-s * distance, c * distance, zero], axis=1),
        u=np.stack([c * PIXEL_MM, s * PIXEL_MM, zero], axis=1),
        v=np.stack([zero, zero, zero + PIXEL_MM], axis=1),
    )


@dataclass(frozen=True)
class SliceSpec:
    """A slice as RECAST3D's nine numbers: pixel (i, j) of a width x height slice is centred at
    base + (i + 1/2) / width * x_axis + (j + 1/2) / height * y_axis; stored with i fastest."""

    name: str
    base: tuple
    x_axis: tuple
    y_axis: tuple
    width: int
    height: int

    def axis_of(self, vector) -> int:
        """The world axis (0, 1, 2) an axis-aligned slice vector points along."""
        nonzero = [a for a in range(3) if vector[a] != 0]
        if len(nonzero) != 1:
            raise ValueError(f"slice {self.name}: axis {vector} is not along a world axis")
        return nonzero[0]

    @property
    def i_axis(self) -> int:
        return self.axis_of(self.x_axis)

    @property
    def j_axis(self) -> int:
        return self.axis_of(self.y_axis)

    @property
    def normal_axis(self) -> int:
        return 3 - self.i_axis - self.j_axis

    def points(self, rows=None) -> np.ndarray:
        """World coordinates (mm) of the slice's pixels, (len(rows) * width, 3), i fastest."""
        rows = np.arange(self.height) if rows is None else np.asarray(rows)
        fi = (np.arange(self.width) + 0.5) / self.width
        fj = (rows + 0.5) / self.height
        base = np.asarray(self.base, dtype=np.float64)
        x_axis = np.asarray(self.x_axis, dtype=np.float64)
        y_axis = np.asarray(self.y_axis, dtype=np.float64)
        grid = base + fj[:, None, None] * y_axis + fi[None, :, None] * x_axis
        return grid.reshape(-1, 3)


def quasi3d_slices(setup: Setup) -> list:
    """grid_spec.cpp's default_slices of the box bench_scene.cu uses: x = 0, y = 0, z = 0."""
    s = float(setup.slice_side)
    h = float(setup.rows)
    n = setup.slice_side
    return [
        SliceSpec("x=0 (vertical)", (0.0, -s / 2, -h / 2), (0.0, s, 0.0), (0.0, 0.0, h), n, n),
        SliceSpec("y=0 (vertical)", (-s / 2, 0.0, -h / 2), (s, 0.0, 0.0), (0.0, 0.0, h), n, n),
        SliceSpec("z=0 (axial)", (-s / 2, -s / 2, 0.0), (s, 0.0, 0.0), (0.0, s, 0.0), n, n),
    ]


def _hash(xp, x):
    """bench_scene.cu's integer hash on uint32 arrays (wrapping arithmetic)."""
    x = x ^ (x >> xp.uint32(16))
    x = x * xp.uint32(0x7FEB352D)
    x = x ^ (x >> xp.uint32(15))
    x = x * xp.uint32(0x846CA68B)
    return x ^ (x >> xp.uint32(16))


def smooth_random_projection(xp, rows: int, cols: int, seed: int):
    """A few random plane waves plus 5 % noise (rows x cols float32): smooth like filtered
    projections of real objects, never zeros."""
    r = xp.arange(rows, dtype=xp.float32)[:, None]
    c = xp.arange(cols, dtype=xp.float32)[None, :]
    value = xp.full((rows, cols), 0.3, dtype=xp.float32)
    for w in range(4):
        h = int(_hash(np, np.array([seed * 16 + w], dtype=np.uint32))[0])
        kx = np.float32(((h & 1023) / 1023.0 - 0.5) * 0.2)
        ky = np.float32((((h >> 10) & 1023) / 1023.0 - 0.5) * 0.2)
        phase = np.float32(((h >> 20) & 1023) / 1023.0 * 6.2831853)
        value += np.float32(0.5) * xp.cos(kx * c + ky * r + phase)
    index = xp.arange(rows * cols, dtype=xp.uint32).reshape(rows, cols)
    noise = _hash(xp, xp.uint32(seed) ^ _hash(xp, index))
    value += np.float32(0.05) * ((noise & xp.uint32(0xFFFF)).astype(xp.float32) / 65535.0 - 0.5)
    return value.astype(xp.float32)


def smooth_random_projections(xp, setup: Setup):
    """The window: projection p is seeded with p + 1, as in bench_scene.cu."""
    out = xp.empty((setup.projections, setup.rows, setup.cols), dtype=xp.float32)
    for p in range(setup.projections):
        out[p] = smooth_random_projection(xp, setup.rows, setup.cols, p + 1)
    return out
