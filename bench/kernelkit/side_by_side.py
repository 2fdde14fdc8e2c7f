#!/usr/bin/env python3
"""KernelKit (kernelkit_quasi3d.py's JSON) beside cuda_bench (its JSON) from one device run: the
quasi-3D full recompute of the cone-beam set-ups, as a markdown table. "Launches prepared": our
default storage's automatic tuning with its launches built before the timing and only enqueued
while timed, as KernelKit's timings replay a CUDA graph built before them, and replayed from a CUDA
graph too, and with the host's work through a graph updated every call (as slice moves run); the
host's preparation (pairing check, launch parameters) is timed apart.

    python3 side_by_side.py kernelkit_quasi3d.json cuda_bench.json
"""
import json
import sys


def row(*cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def ours_by_path(cuda_bench):
    """(set-up, storage) -> cuda_bench's cone-beam full-recompute entry."""
    return {(r["setup"], r["storage"]): r for r in cuda_bench["results"]
            if r.get("section") == "quasi-3D full recompute" and r.get("beam") == "cone"}


def main(kernelkit_path, cuda_bench_path):
    kernelkit = json.load(open(kernelkit_path))
    ours = ours_by_path(json.load(open(cuda_bench_path)))
    print(f"Device: {kernelkit['environment']['device']} (KernelKit and cuda_bench in one call)\n")
    print(row("set-up", "KernelKit tuned ms", "KernelKit ASTRA defaults ms",
              "ours texture fp32 ms", "ours texture fp16 ms", "ours fp16 mirrored ms",
              "ours exact ms", "speed-up texture fp32 (KernelKit / ours)", "speed-up texture fp16",
              "speed-up fp16 mirrored", "speed-up exact", "KernelKit refill + BP ms",
              "ours texture fp32 with update ms", "KernelKit verified (max rel. error)",
              "ours fp16 mirrored, launches prepared ms", "speed-up prepared",
              "ours fp16 mirrored host preparation us", "ours fp16 mirrored, graph replay ms",
              "speed-up graph replay", "ours fp16 mirrored, host work and updated graph ms",
              "speed-up host work and updated graph"))
    print(row(*["---"] * 21))
    done = [r for r in kernelkit["results"] if "error" not in r]
    for r in kernelkit["results"]:
        if "error" in r:
            print(row(r["setup"], f"KernelKit failed: {r['error']}", *["-"] * 19))
    for r in done:
        kk_ms = r["tuned quasi-3D ms (graph)"]
        texture = ours.get((r["setup"], "texture fp32"), {})
        half = ours.get((r["setup"], "texture fp16"), {})
        mirrored = ours.get((r["setup"], "texture fp16 mirrored"), {})
        exact = ours.get((r["setup"], "linear fp32"), {})

        def speed_up(entry, key="kernel ms"):
            return f"{kk_ms / entry[key]:.2f}x" if entry and key in entry else "-"

        def ms(entry, key="kernel ms"):
            return f"{entry[key]:.4f}" if entry and key in entry else "-"

        error = max(c["relative error"] for c in r["verification"])
        print(row(r["setup"], f"{kk_ms:.4f}", f"{r['ASTRA defaults quasi-3D ms (graph)']:.4f}",
                  ms(texture), ms(half), ms(mirrored), ms(exact), speed_up(texture),
                  speed_up(half), speed_up(mirrored), speed_up(exact),
                  f"{r['refill + quasi-3D ms']:.3f}", ms(texture, "with update ms"),
                  f"{r['verified']} ({error:.1e})", ms(mirrored, "auto prepared ms"),
                  speed_up(mirrored, "auto prepared ms"), ms(mirrored, "host prepare us"),
                  ms(mirrored, "auto graph ms"), speed_up(mirrored, "auto graph ms"),
                  ms(mirrored, "auto graph updated ms"),
                  speed_up(mirrored, "auto graph updated ms")))
    print("\nKernelKit's tuned configuration per slice (x = 0, y = 0, z = 0):")
    for r in done:
        slices = ", ".join(f"{label} ({ms:.4f} ms)"
                           for label, ms in zip(r["tuned labels"], r["per-slice ms (graph)"]))
        print(f"- {r['setup']}: {slices}; search reached stage {r['search reached stage']}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
