"""The runner's JSON (every number, the tuning search, the environment) and its printed table."""
import json
import os
import sys

import cupy as cp
import numpy as np


def environment(args, kernels) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    commit_file = os.path.join(args.kernelkit, "KERNELKIT_COMMIT")
    seconds = kernels.compile_seconds
    return {
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "multiprocessors": props["multiProcessorCount"],
        "cupy": cp.__version__, "numpy": np.__version__, "python": sys.version.split()[0],
        "kernelkit commit": open(commit_file).read().strip()
        if os.path.exists(commit_file) else "unknown",
        "kernels compiled": len(seconds),
        "compile seconds median": float(np.median(seconds)) if seconds else 0.0,
        "compile seconds total": float(np.sum(seconds)),
        "compile wall seconds in worker threads": kernels.precompile_wall_seconds,
        "tuning": {"reps": args.tune_reps, "budget s": args.tune_budget_s,
                   "tuned": not args.no_tune},
        "final reps": args.reps,
    }


def write_json(args, kernels, results, tuning_rows, failures):
    with open(args.json, "w") as out:
        json.dump({"environment": environment(args, kernels), "results": results,
                   "tuning": tuning_rows, "failed configurations": failures}, out, indent=1)


def print_table(results):
    header = ("setup", "texture", "tuned ms", "ASTRA-default ms", "from-Python ms", "GUPS",
              "refill ms", "quoted ms", "max rel. error", "verified")
    print("\n== KernelKit quasi-3D full recompute (cone beam, 3 slices, CUDA-graph medians)")
    print("".join(f"{h:>17}" for h in header))
    for r in results:
        if "error" in r:
            print(f"{r['setup']:>17}  failed: {r['error']}")
            continue
        cells = (r["setup"], r["texture"], f"{r['tuned quasi-3D ms (graph)']:.4f}",
                 f"{r['ASTRA defaults quasi-3D ms (graph)']:.4f}",
                 f"{r['tuned quasi-3D ms (launched from Python)']:.4f}", f"{r['GUPS']:.1f}",
                 f"{r['texture refill ms']:.4f}", r["quoted KernelKit ms"],
                 f"{max(c['relative error'] for c in r['verification']):.2e}", r["verified"])
        print("".join(f"{str(c):>17}" for c in cells))
        for label, ms in zip(r["tuned labels"], r["per-slice ms (graph)"]):
            print(f"{'':>17}{label}: {ms:.4f} ms")
