#!/usr/bin/env python3
"""Streams a numpy phantom (three spheres, exact parallel-beam line integrals) into a running
slicestream-server as a detector would, then fetches an axial slice and compares it with the
phantom.

    slicestream-server &          # default endpoints
    /usr/bin/python3 examples/stream_phantom.py [--data tcp://...] [--requests tcp://...]
"""
import argparse

import numpy as np

from slicestream import Box, Client, Detector, axis_slice, parallel_vectors
from slicestream.geometry import pixel_centres
from slicestream.phantom import Sphere, densities, line_integrals

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--data", default="tcp://127.0.0.1:5570")
parser.add_argument("--requests", default="tcp://127.0.0.1:5572")
parser.add_argument("--rows", type=int, default=64)
parser.add_argument("--cols", type=int, default=128)
parser.add_argument("--angles", type=int, default=180)
parser.add_argument("--rotations", type=int, default=2)
args = parser.parse_args()

half = args.cols / 2
box = Box((-half, -half, -args.rows / 2), (half, half, args.rows / 2))
phantom = [Sphere((0, 0, 0), 0.7 * half, 0.01), Sphere((0.3 * half, 0, 4), 0.2 * half, 0.01)]
angles = np.arange(args.angles) * np.pi / args.angles
projections = [line_integrals(phantom, v, args.rows, args.cols) for v in parallel_vectors(angles)]

with Client(args.requests) as client, Detector(args.data) as detector:
    baseline = client.status()
    scan_id = baseline.scan_id + 1
    detector.begin_parallel_scan(scan_id, angles, args.rows, args.cols, box, dtype=np.float32,
                                 already_linear=True, description="stream_phantom.py")
    for rotation in range(args.rotations):
        for p in projections:
            detector.send_frame(p.astype(np.float32))
    sent = detector.end_scan()
    client.wait_for_scan(scan_id, sent, baseline)
    orientation = axis_slice("z", box)
    header, values = client.get_slice(orientation, 128, 128)
    reference = densities(phantom, pixel_centres(orientation, 128, 128))
    error = np.linalg.norm(values - reference) / np.linalg.norm(reference)
    print(f"scan {scan_id}: {header.projections_integrated} projections integrated; axial slice "
          f"relative error {error:.3f}, centre {values[64, 64]:.5f} per mm (phantom {reference[64, 64]:.5f})")
