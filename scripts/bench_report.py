#!/usr/bin/env python3
"""Print oxnet's benchmark figures as ratios next to their targets.

Run after `cargo bench -p oxnet-ops --bench engine`; reads criterion's
estimates (median times) from target/criterion. Standard library only.
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def median_ns(group, bench=None):
    path = ROOT / group / bench / "new" / "estimates.json" if bench else ROOT / group / "new" / "estimates.json"
    try:
        return json.loads(path.read_text())["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        sys.exit(f"no criterion result at {path}; run `cargo bench -p oxnet-ops --bench engine` first")


def fmt(ns):
    return f"{ns / 1000:.3f} us" if ns < 1e6 else f"{ns / 1e6:.3f} ms"


def main():
    builtin = median_ns("dispatch_1_element", "builtin_sigmoid")
    custom = median_ns("dispatch_1_element", "custom_sigmoid")
    by_name = median_ns("dispatch_1_element", "builtin_sigmoid_by_name")
    copy = median_ns("sigmoid_1M_f32", "copy_same_bytes")
    sig_buf = median_ns("sigmoid_1M_f32", "sigmoid_into_buffer")
    sig_new = median_ns("sigmoid_1M_f32", "sigmoid_new_output")
    gemm = median_ns("matmul_1024_f32", "gemm_crate_direct")
    dot = median_ns("matmul_1024_f32", "oxnet_dot")
    rec = median_ns("sigmoid_fwd_bwd_recorded_1_element")
    flops = 2 * 1024 ** 3
    rows = [
        ("built-in op dispatch, 1 element", fmt(builtin), "< 1 us"),
        ("  same, looked up by name + attrs parsed", fmt(by_name), "(for reference)"),
        ("Rust custom op dispatch, 1 element", fmt(custom), "< 1 us"),
        ("custom / built-in", f"{custom / builtin:.2f}x", "<= 1.2x"),
        ("sigmoid 1M f32 into a buffer / plain copy", f"{sig_buf / copy:.2f}x ({fmt(sig_buf)} vs {fmt(copy)})", "<= 1.25x"),
        ("  same, allocating the output", f"{sig_new / copy:.2f}x ({fmt(sig_new)})", "(for reference)"),
        ("dot 1024^3 f32 / gemm crate direct (throughput)", f"{gemm / dot:.0%} ({flops / dot:.0f} vs {flops / gemm:.0f} GFLOP/s)", ">= 90%"),
        ("sigmoid fwd+bwd recorded, 1 element", fmt(rec), "< 3 us"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:<40} target {target}")


if __name__ == "__main__":
    main()
