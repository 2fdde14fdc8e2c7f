"""One set-up after another: tune KernelKit per slice, time the quasi-3D recompute, check it."""
import dataclasses
import json
import time
import traceback

import cupy as cp
import numpy as np

from kernelkit_slices import (KernelCache, KernelConfig, SliceBackprojection, WindowTextures,
                              launcher, median_ms, projection_geometries)
from quasi3d_report import print_table, write_json
from reference_bp import fdk_backproject
from setups import SETUPS, cone_vectors, quasi3d_slices, smooth_random_projections
from tuning import ASTRA_DEFAULT, SliceSearch, search_setup

# A check passes below this relative error against the float64 reference: hardware filtering's
# 8-bit weights leave a few 1e-4 on smooth data, a wrong geometry or a skipped voxel far more.
VERIFY_TOLERANCE = 2e-3


class SetupRun:
    """One set-up on the GPU: projections, KernelKit textures, the three slices."""

    def __init__(self, setup, kernels: KernelCache, stream):
        self.setup = setup
        self.stream = stream
        self.kernels = kernels
        with stream:
            self.projections = smooth_random_projections(cp, setup)
        stream.synchronize()
        self.vectors = cone_vectors(setup)
        geoms = projection_geometries(setup, self.vectors)
        self.slices = [SliceBackprojection(k, spec, geoms, kernels)
                       for k, spec in enumerate(quasi3d_slices(setup))]
        self.textures = WindowTextures(self.projections)
        self.all_graphs = True  # every timing replayed a CUDA graph

    def prepare(self, slices, configs):
        """Kernels with this set-up's parameters, textures and volumes, all ready on the stream
        before anything is captured (they allocate and copy)."""
        with self.stream:
            kernels = [s.prepare(c) for s, c in zip(slices, configs)]
            for s, c in zip(slices, configs):
                self.textures.argument(c.texture)
                s.volume(c.loop)
        self.stream.synchronize()
        return kernels

    def enqueue(self, slices, kernels, configs):
        with self.stream:
            for s, k, c in zip(slices, kernels, configs):
                s.enqueue(k, c, self.textures)

    def launcher(self, slices, configs):
        """Runs the slices' backprojections: a CUDA-graph replay where capture works."""
        kernels = self.prepare(slices, configs)
        launch, is_graph = launcher(self.stream, lambda: self.enqueue(slices, kernels, configs))
        self.all_graphs = self.all_graphs and is_graph
        return launch

    def time(self, launch, reps, warmup):
        return median_ms(self.stream, launch, reps, warmup)

    def release(self):
        self.textures.release()
        self.projections = None
        self.slices = []
        cp.get_default_memory_pool().free_all_blocks()


def measure_point(run: SetupRun, slice_bp, config, reps, failures):
    try:
        return run.time(run.launcher([slice_bp], [config]), reps, warmup=2)
    except Exception as error:  # a configuration the compiler, the kernel or the driver refuses
        failures.append({"setup": run.setup.name, "slice": slice_bp.spec.name,
                         "config": dataclasses.asdict(config), "error": str(error)[:300]})
        return None


def tuned_configs(run: SetupRun, args, failures, tuning_rows):
    """Per slice, the best configuration of the search (one texture resource for all)."""
    if args.no_tune:
        return [ASTRA_DEFAULT] * 3, "none", ASTRA_DEFAULT.texture
    searches = [SliceSearch(lambda c, s=s: measure_point(run, s, c, args.tune_reps, failures))
                for s in run.slices]

    def compile_stage(per_slice):
        run.kernels.precompile([(s.index, s.spec, c) for s, configs in zip(run.slices, per_slice)
                                for c in configs])

    texture, reached = search_setup(searches, args.tune_budget_s, compile_stage)
    for s, search in zip(run.slices, searches):
        for stage, config, ms in search.rows:
            tuning_rows.append({"setup": run.setup.name, "slice": s.spec.name, "stage": stage,
                                "config": config.label(), **dataclasses.asdict(config),
                                "ms": ms})
    return [search.best(texture)[1] for search in searches], reached, texture


def verify(run: SetupRun, configs) -> list:
    """The tuned slices against the float64 reference, on every row (small slices) or 64 rows."""
    run.launcher(run.slices, configs)()
    run.stream.synchronize()
    checks = []
    for s, c in zip(run.slices, configs):
        height = s.spec.height
        rows = np.arange(height) if height <= 512 else np.unique(
            np.linspace(0, height - 1, 64).round().astype(int))
        got = s.result(c)[cp.asarray(rows)].astype(cp.float64).ravel()
        ref = fdk_backproject(cp, run.projections, run.vectors, s.spec.points(rows))
        scale = float(cp.vdot(got, ref) / cp.vdot(ref, ref))
        norm = float(cp.linalg.norm(ref))
        checks.append({
            "slice": s.spec.name, "rows checked": int(len(rows)),
            "relative error": float(cp.linalg.norm(got - ref)) / norm,
            "fitted scale": scale,
            "relative error after fitting the scale":
                float(cp.linalg.norm(got - scale * ref)) / (abs(scale) * norm),
            "finite": bool(cp.isfinite(got).all()),
        })
    return checks


def run_setup(setup, kernels, stream, args, failures, tuning_rows) -> dict:
    started = time.monotonic()
    run = SetupRun(setup, kernels, stream)
    configs, reached, texture = tuned_configs(run, args, failures, tuning_rows)
    tuned = run.launcher(run.slices, configs)
    tuned_ms = run.time(tuned, args.reps, warmup=10)
    per_slice_ms = [run.time(run.launcher([s], [c]), args.reps, warmup=5)
                    for s, c in zip(run.slices, configs)]
    prepared = run.prepare(run.slices, configs)
    direct_ms = run.time(lambda: run.enqueue(run.slices, prepared, configs), args.reps, 5)
    default_ms = run.time(run.launcher(run.slices, [ASTRA_DEFAULT] * 3), args.reps, 5)
    refill_ms = run.time(lambda: run.textures.refill(texture, stream), 10, 2)

    def refill_and_backproject():
        run.textures.refill(texture, stream)
        tuned()

    update_ms = run.time(refill_and_backproject, 10, 2)
    checks = verify(run, configs)
    samples = 3.0 * setup.slice_side ** 2 * setup.projections
    result = {
        "setup": setup.name, "detector rows x cols": [setup.rows, setup.cols],
        "slice side": setup.slice_side, "projections": setup.projections,
        "texture": texture, "search reached stage": reached,
        "tuned configs": [dataclasses.asdict(c) for c in configs],
        "tuned labels": [c.label() for c in configs],
        "tuned quasi-3D ms (graph)": tuned_ms, "per-slice ms (graph)": per_slice_ms,
        "tuned quasi-3D ms (launched from Python)": direct_ms,
        "ASTRA defaults quasi-3D ms (graph)": default_ms, "GUPS": samples / (tuned_ms * 1e6),
        "texture refill ms": refill_ms, "refill + quasi-3D ms": update_ms,
        "quoted KernelKit ms": setup.quoted_kernelkit_ms, "verification": checks,
        "verified": all(c["finite"] and c["relative error"] < VERIFY_TOLERANCE
                        for c in checks),
        "CUDA graphs": run.all_graphs, "seconds": time.monotonic() - started,
    }
    run.release()
    return result


def run_all(args) -> int:
    kernels = KernelCache()
    stream = cp.cuda.Stream(non_blocking=True)
    results, failures, tuning_rows = [], [], []
    for name in args.setups.split(","):
        try:
            results.append(run_setup(SETUPS[name], kernels, stream, args, failures, tuning_rows))
            print(f"done: {name} ({results[-1]['seconds']:.0f} s)", flush=True)
        except Exception as error:  # noqa: BLE001 (the other set-ups still run; JSON says why)
            traceback.print_exc()
            results.append({"setup": name, "error": repr(error)[:500], "verified": False})
            cp.get_default_memory_pool().free_all_blocks()
        write_json(args, kernels, results, tuning_rows, failures)
    print_table(results)
    print(f"\nJSON: {args.json}")
    return 0 if all(r["verified"] for r in results) else 3


def profile_once(args):
    """The tuned quasi-3D recompute of one set-up, warm, between cudaProfilerStart/Stop."""
    entry = next(r for r in json.load(open(args.best))["results"] if r["setup"] == args.profile)
    configs = [KernelConfig(**c) for c in entry["tuned configs"]]
    stream = cp.cuda.Stream(non_blocking=True)
    run = SetupRun(SETUPS[args.profile], KernelCache(), stream)
    kernels = run.prepare(run.slices, configs)
    run.enqueue(run.slices, kernels, configs)
    stream.synchronize()
    cp.cuda.runtime.profilerStart()
    run.enqueue(run.slices, kernels, configs)
    stream.synchronize()
    cp.cuda.runtime.profilerStop()
    print(f"profiled: KernelKit {args.profile}: " + "; ".join(c.label() for c in configs))
