"""The PNG plots of benchmarks/report.py, drawn from benchmarks/results/latest.json."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from benchmarks.report_targets import BIG_NODES, TARGET_NODES, find_record

PLOTS = {
    "latency": "latency_vs_nodes.png",
    "speedup": "speedup_vs_nodes.png",
    "accuracy": "accuracy.png",
    "rpc": "rpc_vs_nodes.png",
}


def plot(result: dict, out_dir: Path) -> dict:
    """Draw the PNGs; returns {key: file name} (empty when matplotlib is missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots (pip install -e '.[bench]')", file=sys.stderr)
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    records = result["records"]
    shapes = list(result["shapes"])
    sizes = sorted({r["nodes"] for r in records})
    colors = {"best": "tab:blue", "first-fit": "tab:orange", "naive": "tab:red", "python": "tab:gray"}
    files = {}

    def series(shape, mode, key):
        xs, ys = [], []
        for n in sizes:
            r = find_record(result, n, shape, mode)
            if r and r.get(key) is not None:
                xs.append(n)
                ys.append(r[key])
        return xs, ys

    # Latency vs nodes, one panel per shape.
    cols = 3
    rows = math.ceil(len(shapes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    for ax, shape in zip(axes.flat, shapes):
        for mode in ("best", "first-fit"):
            xs, ys = series(shape, mode, "kernel_ms_p50")
            _, p99 = series(shape, mode, "kernel_ms_p99")
            ax.plot(xs, ys, "o-", color=colors[mode], label=f"{mode} kernel p50")
            ax.plot(xs, p99, "x:", color=colors[mode], alpha=0.7, label=f"{mode} kernel p99")
        xs, ys = series(shape, "first-fit", "naive_ms")
        capped = [not find_record(result, n, shape, "first-fit")["naive_complete"] for n in xs]
        ax.plot(xs, ys, "s-", color=colors["naive"], label="naive rescan (compiled)")
        for x, y, c in zip(xs, ys, capped):
            if c:
                ax.annotate("capped", (x, y), textcoords="offset points", xytext=(-10, 6), fontsize=7)
        xs, ys = series(shape, "first-fit", "python_ms")
        if xs:
            ax.plot(xs, ys, "d--", color=colors["python"], label="naive rescan (plain Python)")
        if shape == result["target_shape"]:
            ax.plot([TARGET_NODES, BIG_NODES], [0.5, 3.0], "k*", markersize=10, label="targets")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(shape)
        ax.set_xlabel("nodes")
        ax.set_ylabel("ms per estimate")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Kernel latency vs nodes (log-log)")
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["latency"], dpi=90)
    plt.close(fig)
    files["latency"] = PLOTS["latency"]

    # Speedup vs nodes.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, mode in zip(axes, ("first-fit", "best")):
        for shape in shapes:
            xs, ys = series(shape, mode, "speedup")
            ax.plot(xs, ys, "o-", label=shape)
        ax.axhline(200, color="k", linestyle="--", linewidth=1, label="200× target")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{mode}: naive rescan ms / kernel p50 ms")
        ax.set_xlabel("nodes")
        ax.set_ylabel("speedup")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["speedup"], dpi=90)
    plt.close(fig)
    files["speedup"] = PLOTS["speedup"]

    # RPC vs nodes (target shape).
    shape = result["target_shape"]
    if any(r.get("rpc") for r in records):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for mode, style in (("best", "-"), ("first-fit", "--")):
            conc = sorted({int(c) for r in records if r.get("rpc") for c in r["rpc"]})
            for c in conc:
                xs, p50, rps = [], [], []
                for n in sizes:
                    r = find_record(result, n, shape, mode)
                    if r and r.get("rpc") and str(c) in r["rpc"]:
                        xs.append(n)
                        p50.append(r["rpc"][str(c)]["p50_ms"])
                        rps.append(r["rpc"][str(c)]["rps"])
                axes[0].plot(xs, p50, "o" + style, label=f"{mode}, {c} caller(s)")
                axes[1].plot(xs, rps, "o" + style, label=f"{mode}, {c} caller(s)")
        axes[0].axhline(1.0, color="k", linestyle=":", linewidth=1, label="1 ms target (1 caller)")
        axes[1].axhline(1000, color="k", linestyle=":", linewidth=1, label="1,000/s target (16 callers)")
        for ax, title, label in ((axes[0], f"RPC p50 latency, {shape}", "ms"),
                                 (axes[1], f"throughput, {shape}", "estimates/s")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(title)
            ax.set_xlabel("nodes")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS["rpc"], dpi=90)
        plt.close(fig)
        files["rpc"] = PLOTS["rpc"]

    # Accuracy bars.
    acc = result["accuracy"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    modes = ("first-fit", "best")
    labels = ["all members", "members with optimum > 0"]
    width = 0.35
    for i, mode in enumerate(modes):
        values = [acc[mode]["optimal_rate"] * 100, acc[mode]["optimal_rate_nonzero"] * 100]
        bars = axes[0].bar([j + i * width for j in range(2)], values, width, label=mode, color=colors[mode])
        for b, v in zip(bars, values):
            axes[0].annotate(f"{v:.1f}%", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    axes[0].set_xticks([j + width / 2 for j in range(2)], labels)
    axes[0].set_ylabel("% reaching the exhaustive optimum")
    axes[0].set_ylim(0, 105)
    axes[0].set_title(f"{acc['members']:,} random members; over-promises: first-fit "
                      f"{acc['first-fit']['over_promises']}, best {acc['best']['over_promises']}")
    axes[0].legend()
    keys = list(acc["best"]["gap_histogram"])
    for i, mode in enumerate(modes):
        values = [acc[mode]["gap_histogram"][k] for k in keys]
        axes[1].bar([j + i * width for j in range(len(keys))], values, width, label=mode, color=colors[mode])
    axes[1].set_xticks([j + width / 2 for j in range(len(keys))], [f"gap {k}" for k in keys])
    axes[1].set_yscale("log")
    axes[1].set_ylabel("members")
    axes[1].set_title("sets below the optimum")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["accuracy"], dpi=90)
    plt.close(fig)
    files["accuracy"] = PLOTS["accuracy"]
    return files
