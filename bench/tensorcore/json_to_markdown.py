#!/usr/bin/env python3
"""Turns tensorcore_bench's JSON into the markdown tables of docs/performance.md.

    python3 bench/tensorcore/json_to_markdown.py tensorcore_bench.json
"""
import json
import sys

SHAPES = ["32.8.16", "16.16.16", "8.32.16"]
ORDERINGS = ["pseudo-Morton", "ray-sheared"]
PAPER_NNZ = {64: 37.9, 128: 78.4, 256: 159.5, 320: 200.0, 384: 240.8, 512: 321.9}
PAPER_T3 = {"16.16.16": (5.19, 2.01), "32.8.16": (8.83, 2.57), "8.32.16": (3.36, 1.55)}


def row(*cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(path):
    d = json.load(open(path))
    sizes = d["sizes"]
    out = [f"Device: {d['device']}; device-to-device copy {d['copy_bandwidth_gbs']:.0f} GB/s "
           "(bytes read + written).", ""]
    out += ["**Table 2 — system matrix** (720 x 512 parallel beam)", "",
            row("image", "elements (1e9)", "nnz (1e6)", "paper nnz (1e6)", "sparsity %", "CSR fp32 GB"),
            row(*["---"] * 6)]
    for s in sizes:
        n = s["size"]
        out.append(row(f"{n}²", f"{s['matrix_elements'] / 1e9:.1f}", f"{s['nnz'] / 1e6:.1f}",
                       PAPER_NNZ.get(n, "-"), f"{s['sparsity_percent']:.2f}",
                       f"{s['csr_fp32_bytes'] / 1e9:.2f}"))
    out += ["", "**Table 3 — non-empty blocks, % of the paper's block grid** (fill = nnz / stored "
            "fp16 values)", "",
            row("image", "shape", "natural", "pseudo-Morton", "ray-sheared", "fill PM %",
                "fill sheared %", "paper before / after (512²)"),
            row(*["---"] * 8)]
    for s in sizes:
        if "blocks" not in s:  # --quick: timing tables at some sizes only
            continue
        for shape in SHAPES:
            b = s["blocks"][shape]
            paper = "{} / {}".format(*PAPER_T3[shape]) if s["size"] == 512 else ""
            out.append(row(f"{s['size']}²", shape, f"{b['natural']['nonempty_percent']:.2f}",
                           f"{b['pseudo-Morton']['nonempty_percent']:.2f}",
                           f"{b['ray-sheared']['nonempty_percent']:.2f}",
                           f"{b['pseudo-Morton']['fill_percent']:.1f}",
                           f"{b['ray-sheared']['fill_percent']:.1f}", paper))
    out += ["", "**Tables 4/5 — 32-slice batches: FP, BP (whole operator incl. fp16 operand "
            "conversion; SpMM kernel alone in brackets), ms; per image per CG iteration; matrix "
            "memory; effective bandwidth of the SpMM (matrix bytes / time)**", "",
            row("image", "method", "GB", "A·X ms", "Aᵀ·Y ms", "FP+BP / image ms", "× cuSPARSE",
                "CG iter / image ms", "× cuSPARSE", "fwd / bwd GB/s"),
            row(*["---"] * 10)]
    for s in sizes:
        if "tensorcore" not in s:
            continue
        c = s["cusparse"]
        out.append(row(f"{s['size']}²", "cuSPARSE CSR fp32", f"{c['matrix_bytes'] / 1e9:.2f}",
                       f"{c['spmm_forward_ms']:.3f}", f"{c['spmm_backward_ms']:.3f}",
                       f"{c['fp_bp_per_image_ms']:.4f}", "1", f"{c['cg_iteration_ms_per_image']:.4f}",
                       "1", ""))
        for o in ORDERINGS:
            for shape in SHAPES:
                t = s["tensorcore"][o][shape]
                out.append(row("", f"TC {o} {shape}", f"{t['matrix_bytes'] / 1e9:.2f}",
                               f"{t['forward_ms']:.3f} ({t['spmm_forward_ms']:.3f})",
                               f"{t['backward_ms']:.3f} ({t['spmm_backward_ms']:.3f})",
                               f"{t['fp_bp_per_image_ms']:.4f}",
                               f"{t['speedup_vs_cusparse_fp_bp']:.2f}",
                               f"{t['cg_iteration_ms_per_image']:.4f}",
                               f"{t['speedup_vs_cusparse_cg']:.2f}",
                               f"{t['effective_forward_gbs']:.0f} / {t['effective_backward_gbs']:.0f}"))
        for shape in SHAPES:
            t = s["symmetric"][shape]
            out.append(row("", f"TC 8-symmetry {shape}", f"{t['matrix_bytes'] / 1e9:.3f}",
                           f"{t['forward_ms']:.3f} ({t['spmm_forward_ms']:.3f})",
                           f"{t['backward_ms']:.3f} ({t['spmm_backward_ms']:.3f})",
                           f"{t['fp_bp_per_image_ms']:.4f}", f"{t['speedup_vs_cusparse_fp_bp']:.2f}",
                           f"{t['cg_iteration_ms_per_image']:.4f}", f"{t['speedup_vs_cusparse_cg']:.2f}",
                           f"{t['effective_forward_gbs']:.0f} / {t['effective_backward_gbs']:.0f}"))
    out += ["", "**Tables 6/7 — 8-symmetry forward projection of one image** (whole operator: "
            "gather, SpMM, inverse transforms and sum; SpMM alone in brackets)", "",
            row("image", "cuSPARSE SpMV ms", "SpMV GB/s", *[f"{sh} ms (× SpMV), GB" for sh in SHAPES]),
            row(*["---"] * 6)]
    for s in sizes:
        if "symmetric" not in s:
            continue
        c = s["cusparse"]
        cells = []
        for shape in SHAPES:
            t = s["symmetric"][shape]
            cells.append(f"{t['single_image_forward_ms']:.4f} ({t['single_image_spmm_ms']:.4f}) "
                         f"{t['speedup_vs_cusparse_spmv']:.2f}x, {t['matrix_bytes'] / 1e9:.3f}")
        out.append(row(f"{s['size']}²", f"{c['spmv_forward_ms']:.3f}",
                       f"{c['effective_spmv_gbs']:.0f}", *cells))
    out += ["", "**CG accuracy** (20 iterations from zero on exact line integrals of the "
            "Shepp-Logan phantom; relative error to the pixelised phantom; difference to fp32; "
            "split: the WMMA kernels' split accumulation chains, one chain: a chain per output as "
            "before)", "",
            row("image", "fp32 cuSPARSE", "fp16 TC config", "fp16 operands, one chain",
                "fp16 operands, split", "compensated, one chain", "compensated, split",
                "compensated CG iter / image ms (× cuSPARSE)"),
            row(*["---"] * 8)]
    for s in sizes:
        if "cg_accuracy" not in s:
            continue
        a = s["cg_accuracy"]

        def cell(error_key, difference_key):
            if error_key not in a:
                return "-"
            return f"{a[error_key]:.5f} ({100 * a[difference_key]:+.2f}%)"

        out.append(row(f"{s['size']}²", f"{a['fp32_relative_error']:.5f}", a["fp16_configuration"],
                       cell("unsplit_fp16_relative_error", "unsplit_relative_difference"),
                       cell("fp16_relative_error", "relative_difference"),
                       cell("unsplit_compensated_relative_error",
                            "unsplit_compensated_relative_difference"),
                       cell("compensated_relative_error", "compensated_relative_difference"),
                       f"{a['compensated_cg_iteration_ms_per_image']:.4f} "
                       f"({a['compensated_speedup_vs_cusparse_cg']:.2f}x)"))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
