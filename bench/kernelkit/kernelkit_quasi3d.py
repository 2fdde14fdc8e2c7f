#!/usr/bin/env python3
"""KernelKit's quasi-3D backprojection, tuned as its paper tunes, on the set-ups of cuda_bench.

For each set-up (bench/cuda/bench_scene.cu: detector, slices, projections; cone beam; the three
orthogonal slices from the whole window) on random smooth projections: a staged search of
KernelKit's kernel parameters per slice (tuning.py), then the tuned quasi-3D recompute (the three
slices' kernels, each slice zeroed first, in one CUDA graph, as the paper times), the same with
ASTRA's defaults, the texture refill from device memory, and a check of the tuned slices against
a float64 backprojection from first principles (reference_bp.py). Times are medians of CUDA-event
timings after warm-up. Prints a table and writes every number to JSON; exits 3 when a check
fails.

    python3 kernelkit_quasi3d.py --kernelkit DIR [--setups flexray,highspeed,tomobank]
                                 [--reps N] [--tune-budget-s S] [--no-tune] [--json FILE]
    python3 kernelkit_quasi3d.py --kernelkit DIR --profile SETUP --best FILE

DIR holds KernelKit's `kernelkit` package (and `transforms3d` where it is not installed);
bench/kernelkit/bundle.sh prepares it. --profile runs the tuned configuration of one set-up
(taken from an earlier run's JSON) once to warm up and once between cudaProfilerStart/Stop, for
`ncu --profile-from-start off`.
"""
import argparse
import os
import sys

import numpy as np


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelkit", required=True, help="folder with the kernelkit package")
    parser.add_argument("--setups", default="flexray,highspeed,tomobank")
    parser.add_argument("--reps", type=int, default=50, help="timed runs of the final numbers")
    parser.add_argument("--tune-reps", type=int, default=7, help="timed runs per tuning point")
    parser.add_argument("--tune-budget-s", type=float, default=60.0,
                        help="a set-up's search skips its stages C, D, E that start later")
    parser.add_argument("--no-tune", action="store_true", help="ASTRA's defaults only")
    parser.add_argument("--json", default="kernelkit_quasi3d.json")
    parser.add_argument("--profile", help="set-up to run once for a profiler")
    parser.add_argument("--best", help="JSON of an earlier run (with --profile)")
    args = parser.parse_args()
    if args.profile and not args.best:
        parser.error("--profile needs --best")
    return args


def import_kernelkit(path: str):
    sys.path.insert(0, os.path.abspath(path))
    # transforms3d 0.4 (Debian's, pure Python) calls np.maximum_sctype at import, which NumPy 2
    # removed; KernelKit uses transforms3d only to rotate geometries (by zero here).
    if not hasattr(np, "maximum_sctype"):
        np.maximum_sctype = lambda t: np.longdouble if issubclass(t, np.floating) else t
    import kernelkit  # noqa: F401


def main():
    args = parse_args()
    import_kernelkit(args.kernelkit)
    import quasi3d_run  # needs kernelkit importable

    if args.profile:
        quasi3d_run.profile_once(args)
        return 0
    return quasi3d_run.run_all(args)


if __name__ == "__main__":
    sys.exit(main())
