#!/usr/bin/env python3
"""Streams an analytic ellipsoid phantom through RECAST3D's own tomop Python module.

A tomop adapter written as RECAST3D's examples are: tomop.publisher (PUSH), ScanSettings,
GeometrySpecification, ParallelBeamGeometry, one dark, one flat, then Projection packets with
cyclic ids, raw counts (flat * exp(-line integral)). SliceRecon's units: 1 x 1 detector pixels.
Used by scripts/interop-recast3d; needs py_tomop (built from RECAST3D's tree) on PYTHONPATH.
"""
import argparse
import time

import numpy as np
import tomop

# (centre, semi-axes, rotation about z in radians, attenuation per pixel) in units of the box's
# half-width; a stretched, simplified 3D Shepp-Logan.
ELLIPSOIDS = [
    ((0.0, 0.0, 0.0), (0.69, 0.92, 0.81), 0.0, 0.02),
    ((0.0, -0.02, 0.0), (0.66, 0.87, 0.78), 0.0, -0.016),
    ((0.22, 0.0, -0.1), (0.11, 0.31, 0.22), -0.31, -0.004),
    ((-0.22, 0.0, -0.1), (0.16, 0.41, 0.28), 0.31, -0.004),
    ((0.0, 0.35, -0.15), (0.21, 0.25, 0.41), 0.0, 0.002),
    ((0.0, 0.1, 0.25), (0.046, 0.046, 0.05), 0.0, 0.004),
    ((-0.08, -0.65, -0.25), (0.046, 0.023, 0.05), 0.0, 0.006),
]


def line_integrals(angle, rows, cols, half):
    """Parallel rays (sin a, -cos a, 0) through detector pixel centres (ASTRA's geom_2vec)."""
    ray = np.array([np.sin(angle), -np.cos(angle), 0.0])
    u = np.array([np.cos(angle), np.sin(angle), 0.0])
    c = np.arange(cols) - cols / 2 + 0.5
    r = np.arange(rows) - rows / 2 + 0.5
    points = c[None, :, None] * u[None, None, :] + r[:, None, None] * np.array([0, 0, 1.0])
    total = np.zeros((rows, cols))
    for centre, axes, phi, mu in ELLIPSOIDS:
        rot = np.array([[np.cos(phi), -np.sin(phi), 0], [np.sin(phi), np.cos(phi), 0], [0, 0, 1]])
        scale = 1.0 / (np.array(axes) * half)
        p = ((points - np.array(centre) * half) @ rot) * scale
        q = (ray @ rot) * scale
        a = q @ q
        b = p @ q
        cc = np.einsum("ijk,ijk->ij", p, p) - 1
        disc = b * b - a * cc
        total += mu * np.where(disc > 0, 2 * np.sqrt(np.maximum(disc, 0)) / a, 0)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=5558)
    parser.add_argument("--rows", type=int, default=96)
    parser.add_argument("--cols", type=int, default=128)
    parser.add_argument("--projections", type=int, default=180, help="per 180 degrees")
    parser.add_argument("--rotations", type=float, default=3)
    parser.add_argument("--fps", type=float, default=100)
    args = parser.parse_args()

    rows, cols, count = args.rows, args.cols, args.projections
    half = cols / 2 / np.sqrt(2)  # the phantom fits the field of view
    angles = np.linspace(0, np.pi, count, endpoint=False)
    dark_value, flat_value = 100.0, 40000.0

    pub = tomop.publisher(args.host, args.port)
    pub.send(tomop.scan_settings_packet(0, 1, 1, False))
    box = [cols / 2, cols / 2, rows / 2]
    pub.send(tomop.geometry_specification_packet(0, [-v for v in box], box))
    pub.send(tomop.parallel_beam_geometry_packet(0, rows, cols, count, angles.astype(np.float32)))
    pixels = rows * cols
    pub.send(tomop.projection_packet(0, 0, [rows, cols], np.full(pixels, dark_value, np.float32)))
    pub.send(tomop.projection_packet(1, 0, [rows, cols], np.full(pixels, flat_value, np.float32)))
    frames = [
        (dark_value + (flat_value - dark_value) * np.exp(-line_integrals(a, rows, cols, half)))
        .astype(np.float32).ravel() for a in angles
    ]
    total = int(args.rotations * count)
    start = time.monotonic()
    for i in range(total):
        pub.send(tomop.projection_packet(2, i, [rows, cols], frames[i % count]))
        delay = start + (i + 1) / args.fps - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(f"sent {total} projections of {rows} x {cols} ({args.rotations} x 180 degrees)")
    time.sleep(1)  # PUSH: let the last frames leave before the socket closes


if __name__ == "__main__":
    main()
