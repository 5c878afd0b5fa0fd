#!/usr/bin/python3
"""plot.py: PNG figures from what sluice's benchmarks print with --json.

usage: /usr/bin/python3 bench/plot.py [--out DIR] FILE...

Each FILE is one JSON object, recognised by its keys:
  `sluice bench sink --json`       sink_throughput.png (samples/s per run and
                                   device) and sink_stages_<device>.png
  `sluice bench pipeline --json`   pipeline_throughput.png (images/s per worker
                                   count) and pipeline_stages.png
  `sluice bench train --json`      train_ops.png (ms per step of each op)
  `bench/torch_sink.py --json`     sink_vs_torch.png (each PyTorch configuration
                                   against sluice's sink and non-sink runs)
  `bench/torch_train.py --json`    train_vs_torch.png (compute-only samples/s)
  a `--profile DIR` trace.json     queue_occupancy.png (each queue's fill
                                   over time: device and pipeline)
Stage figures are bars of busy, waiting (for input) and blocked (on a full
output) as shares of each stage's threads' time, as the text table shows.
Needs Debian's python3-matplotlib; writes into --out (default: the current
folder) and prints each file it wrote. Exit status 1 when a FILE cannot be
read or is of no known kind, 2 for usage errors."""
import argparse
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

BUSY, WAIT, BLOCKED = "#3b75af", "#e5ae38", "#c44e52"


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)


def bars(ax, labels, values, color=BUSY, fmt="{:,.0f}"):
    """Horizontal bars, each labelled with its value; color may be a list."""
    ys = range(len(labels))
    ax.barh(ys, values, color=color)
    ax.set_yticks(list(ys), labels)
    ax.invert_yaxis()
    for y, v in zip(ys, values):
        ax.text(v, y, " " + fmt.format(v), va="center", fontsize=8)
    ax.set_xlim(0, max(values) * 1.25 if values and max(values) > 0 else 1)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))


def stage_bars(stages, title, out, name, written):
    """Busy / waiting / blocked shares of each stage with threads."""
    shown = [s for s in stages if s["threads"] > 0 and s["elapsed_ms"] > 0]
    if not shown:
        return
    labels = [s["name"] for s in shown]
    whole = [s.get("thread_ms") or s["threads"] * s["elapsed_ms"] for s in shown]
    busy = [100 * s["busy_ms"] / w for s, w in zip(shown, whole)]
    wait = [100 * s["wait_input_ms"] / w for s, w in zip(shown, whole)]
    blocked = [100 * s["blocked_output_ms"] / w for s, w in zip(shown, whole)]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(shown) + 2.4))
    ys = range(len(shown))
    ax.barh(ys, busy, color=BUSY, label="busy")
    ax.barh(ys, wait, left=busy, color=WAIT, label="waiting for input")
    ax.barh(ys, blocked, left=[b + w for b, w in zip(busy, wait)], color=BLOCKED,
            label="blocked on a full output")
    ax.set_yticks(list(ys), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the stage's threads x its time")
    ax.set_title("\n".join(w for line in title.split("\n") for w in textwrap.wrap(line, 95)),
                 fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, fontsize=8, frameon=False)
    save(fig, out, name, written)


def plot_sink(d, out, written):
    # Data-only runs are an order of magnitude faster: they go in the title,
    # so that the training runs' bars can be compared.
    runs = [r for r in d["runs"] if r["name"] != "data_only"]
    data = ", ".join(f"{r['device']} {r['samples_per_s']:,.0f}" for r in d["runs"]
                     if r["name"] == "data_only")
    labels = [f"{r['device']} {r['name']}" for r in runs]
    if "hidden_by_device" in d:
        # the hidden fraction h of sink -1; "noise" when every round was
        h = ", ".join(f"{dev} " + ("noise" if v["sink_full"]["median"] is None
                                   else f"{v['sink_full']['median']:.2f}")
                      for dev, v in d["hidden_by_device"].items())
        overlap = f"hidden fraction (sink -1) {h}"
    else:
        overlap = f"overlap {d['overlap_efficiency']:.3f}"
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(runs) + 1.6))
    bars(ax, labels, [r["samples_per_s"] for r in runs])
    ax.set_xlabel("samples/s (medians)")
    ax.set_title(f"sluice bench sink: LeNet5, batch {d.get('batch', 32)}, {d['steps']} steps; "
                 f"{overlap}\ndata only (the pipeline drained): "
                 f"{data} samples/s", fontsize=9)
    save(fig, out, "sink_throughput.png", written)
    for device, stages in d.get("stages_by_device", {}).items():
        verdict = d.get("verdict_by_device", {}).get(device, "")
        stage_bars(stages, f"sink, sink_size -1 on {device}\n{verdict}", out,
                   f"sink_stages_{device.replace(':', '')}.png", written)


def plot_pipeline(d, out, written):
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(runs) + 1.4))
    bars(ax, [f"{r['workers']} worker{'s' if r['workers'] != 1 else ''}" for r in runs],
         [r["images_per_s"] for r in runs])
    ax.set_xlabel("images/s (medians)")
    ax.set_title("sluice bench pipeline", fontsize=10)
    save(fig, out, "pipeline_throughput.png", written)
    last = runs[-1]
    if last.get("stages"):
        stage_bars(last["stages"], f"pipeline, {last['workers']} workers\n{last.get('verdict', '')}",
                   out, "pipeline_stages.png", written)


def plot_train(d, out, written):
    ops = d.get("per_op_ms_per_step", {})
    ops = {k: v for k, v in ops.items() if v > 0}
    if not ops:
        raise ValueError("no per_op_ms_per_step")
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(ops) + 1.4))
    bars(ax, list(ops), list(ops.values()), fmt="{:.3f}")
    ax.set_xlabel("ms per step")
    ax.set_title(f"sluice bench train: GRAPH compute {d['compute_graph_samples_per_s']:,.0f} "
                 f"samples/s", fontsize=10)
    save(fig, out, "train_ops.png", written)


def plot_torch_sink(d, out, written):
    labels, values, colors = [], [], []
    for c in d["configs"]:
        labels.append("torch " + c["id"])
        values.append(c["samples_per_s"])
        colors.append("#8c8c8c")
    for k in ("sink_full", "sink_1000", "nonsink"):
        v = (d.get("sluice") or {}).get(k)
        if v:
            labels.append("sluice " + k)
            values.append(v)
            colors.append(BUSY)
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.4))
    bars(ax, labels, values, color=colors)
    ax.set_xlabel("samples/s, end to end (medians)")
    ax.set_title(f"LeNet5 on Fashion-MNIST: PyTorch {d.get('torch', '')} and sluice, same run",
                 fontsize=10)
    save(fig, out, "sink_vs_torch.png", written)


def plot_torch_train(d, out, written):
    labels = ["torch " + c["config"] if isinstance(c.get("config"), str) else "torch " + str(c.get("id"))
              for c in d["configs"]]
    values = [c["samples_per_s"] for c in d["configs"]]
    s = d.get("sluice") or {}
    if s.get("compute_graph_samples_per_s"):
        labels.append("sluice GRAPH")
        values.append(s["compute_graph_samples_per_s"])
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.4))
    bars(ax, labels, values)
    ax.set_xlabel("samples/s, compute only (medians)")
    ax.set_title("LeNet5 training step: PyTorch and sluice, same run", fontsize=10)
    save(fig, out, "train_vs_torch.png", written)


def plot_trace(d, out, written):
    series = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "C":
            series.setdefault(e["name"], []).append((e["ts"] / 1e3, e["args"]["value"]))
    if not series:
        raise ValueError("the trace holds no queue counters (was it a --profile run?)")
    fig, ax = plt.subplots(figsize=(8, 3))
    for name, pts in series.items():
        pts.sort()
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=name)
    ax.set_xlabel("ms since the profiler started")
    ax.set_ylabel("held: batches (device queue), chunks (pipeline)")
    ax.set_title("queue occupancy: the device queue after each copy, pipeline queues after "
                 "each push", fontsize=10)
    ax.legend(fontsize=8)
    save(fig, out, "queue_occupancy.png", written)


def kind_of(d):
    if "traceEvents" in d:
        return plot_trace
    if "stages_by_device" in d or "overlap_efficiency" in d or "hidden_by_device" in d:
        return plot_sink
    if "pipeline" in d and "runs" in d:
        return plot_pipeline
    if "compute_graph_samples_per_s" in d:
        return plot_train
    if "configs" in d and "best" in d:
        return plot_torch_sink
    if "configs" in d and "best_config" in d:
        return plot_torch_train
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--out", default=".", metavar="DIR", help="where the PNGs go (default: .)")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    written, failed = [], 0
    for path in a.files:
        try:
            with open(path) as f:
                d = json.load(f)
            plot = kind_of(d)
            if plot is None:
                raise ValueError("not the --json output of a sluice or PyTorch bench, nor a trace")
            plot(d, a.out, written)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"plot.py: {path}: {e}", file=sys.stderr)
            failed = 1
    for w in written:
        print(w)
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
