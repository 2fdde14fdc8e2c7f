#!/usr/bin/env python3
"""Turns refinement_quality_bench's JSON into the table of docs/refinement.md.

    python3 bench/refinement/json_to_markdown.py refinement_quality.json
"""
import json
import sys


def main(path):
    d = json.load(open(path))
    rows = {}
    for r in d["results"]:
        rows.setdefault(r["case"], {})[r["refinement"].split(" ")[0]] = r
    out = ["| case | FBP rel. L2 | FBP RMSE | default rel. L2 | default RMSE | change | "
           "iterations, stop | noise level | residual FBP → default | plain CGLS rel. L2 | change |",
           "|---" * 11 + "|"]
    for case, by in rows.items():
        r, c = by["default"], by["cgls"]
        noise = f"{r['noise_level']:.4f}" if r["noise_level"] >= 0 else "unknown"
        out.append(
            f"| {case} | {r['fbp_rel_l2']:.4f} | {r['fbp_rmse']:.3f} | {r['refined_rel_l2']:.4f} | "
            f"{r['refined_rmse']:.3f} | **{r['change_pct']:+.1f} %** | "
            f"{r['iterations']:.0f}, {r['stop']} | {noise} | "
            f"{r['residual_fbp']:.4f} → {r['residual_refined']:.4f} | "
            f"{c['refined_rel_l2']:.4f} | {c['change_pct']:+.1f} % |")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
