#!/usr/bin/python3
"""tables.py: writes the benchmark tables of docs/*.md from docs/figures/*.json.

usage: /usr/bin/python3 bench/tables.py [--check] [--docs DIR] [--figures DIR]

A doc asks for a table with a pair of marker comments:

    <!-- table:sink begin -->
    <!-- table:sink end -->

and this script replaces what lies between them with the table rendered
from the JSON file that table reads (TABLES below), preceded by a line
naming the machine, the date and the exact command that produced it.
bench/figures.sh BUILDDIR runs the benches and writes those files: each
is {"name", "command", "date", "machine": {...}, "sluice": {...},
"result": <the bench's own --json>}. Nothing here is typed by hand, so
a table can only show what a run printed: a field a table needs that the
file lacks (or holds as null) is an error naming the file and the field,
and no file is changed. The PyTorch comparisons are optional (figures.sh
--with-torch); their tables say how to make them until their file exists.

--check writes nothing and exits 1 when a doc is not what the figures give
(for a test or CI). Exit status: 0 done, 1 a missing field or file, a bad
marker or (--check) a stale doc, 2 usage errors. Standard library only.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!-- table:([a-z0-9-]+) (begin|end) -->$")


class TableError(Exception):
    """A table cannot be made; the message says why, naming file and field."""


class Figures:
    """One docs/figures/*.json file, read through need() / opt()."""

    def __init__(self, path, table):
        self.path = path
        self.rel = os.path.relpath(path, ROOT)
        self.table = table
        try:
            with open(path) as f:
                self.data = json.load(f)
        except ValueError as e:
            raise TableError(f"{self.rel}: not JSON ({e})")
        if not isinstance(self.data, dict):
            raise TableError(f"{self.rel}: not a JSON object")

    def _walk(self, keys):
        cur, trail = self.data, []
        for k in keys:
            trail.append(k)
            if isinstance(k, int):
                ok = isinstance(cur, list) and -len(cur) <= k < len(cur)
            else:
                ok = isinstance(cur, dict) and k in cur
            if not ok:
                return None, trail, False
            cur = cur[k]
        return cur, trail, True

    def _where(self, trail):
        return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k)
                       for i, k in enumerate(trail))

    def need(self, *keys, kind=None):
        """The value at keys; a TableError when it is absent, null or not of kind
        ("number": a finite int or float; "str", "list", "dict", "bool")."""
        val, trail, ok = self._walk(keys)
        where = self._where(trail)
        if not ok:
            raise TableError(f"{self.rel}: no field {where} (table '{self.table}' needs it); "
                             f"rerun bench/figures.sh, or fix the table")
        if val is None:
            raise TableError(f"{self.rel}: field {where} is null (table '{self.table}' needs "
                             f"a value)")
        types = {"number": (int, float), "str": str, "list": list, "dict": dict, "bool": bool}
        if kind is not None:
            good = isinstance(val, types[kind])
            if kind == "number":
                good = good and not isinstance(val, bool) and math.isfinite(val)
            if not good:
                raise TableError(f"{self.rel}: field {where} is {val!r}, not a {kind} "
                                 f"(table '{self.table}')")
        return val

    def opt(self, *keys):
        """The value at keys, or None when it is absent: only for what a table
        shows as "-" (a figure the bench leaves out by design)."""
        val, _, ok = self._walk(keys)
        return val if ok else None


# --- formatting -------------------------------------------------------------

def num(v, digits=0):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:,.{digits}f}"


def mib(v):
    return "-" if v is None else f"{v / 1048576:.1f} MiB"


def table(header, rows, align=None):
    align = align or ["---"] + ["--:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def provenance(fig):
    """The line above every table: machine, date, command."""
    m = fig.need("machine", kind="dict")
    name = fig.need("machine", "model_name", kind="str")
    fam = fig.need("machine", "cpu_family")
    model = fig.need("machine", "model")
    cpus = fig.need("machine", "nproc", kind="number")
    avx2 = fig.need("machine", "avx2", kind="bool")
    avx512 = fig.need("machine", "avx512f", kind="bool")
    date = fig.need("date", kind="str")
    cmd = fig.need("command", kind="str")
    bits = [f"{name} (cpu family {fam}, model {model}; {cpus} CPUs; "
            f"AVX2 {'yes' if avx2 else 'no'}, AVX-512F {'yes' if avx512 else 'no'})"]
    s = fig.opt("sluice")
    if isinstance(s, dict) and s.get("version"):
        extra = [f"cpu path {s['cpu_path']}"] if s.get("cpu_path") else []
        if s.get("commit"):
            extra.append(f"commit {s['commit']}")
        bits.append(s["version"] + (f" ({', '.join(extra)})" if extra else ""))
    torch = fig.opt("result", "torch")
    if isinstance(torch, str):
        bits.append(f"torch {torch}")
    if m.get("loadavg"):
        bits.append(f"load average {m['loadavg']} at the start")
    return [f"Machine: {'; '.join(bits)}. Date: {date}. Command: `{cmd}` "
            f"(`{fig.rel}`).", ""]


# --- sluice bench sink --------------------------------------------------------

SINK_RUNS = [("nonsink", "non-sink"), ("sink_full", "sink, −1"), ("sink_1000", "sink, 1000"),
             ("compute_only", "compute only"), ("data_only", "data only")]


def sink_devices(fig, needed=SINK_RUNS):
    runs = fig.need("result", "runs", kind="list")
    devs, by = [], {}
    for i, _ in enumerate(runs):
        d = fig.need("result", "runs", i, "device", kind="str")
        n = fig.need("result", "runs", i, "name", kind="str")
        if d not in by:
            devs.append(d)
            by[d] = {}
        by[d][n] = i
    for d in devs:
        for n, _ in needed:
            if n not in by[d]:
                raise TableError(f"{fig.rel}: no run named {n!r} on {d} in result.runs "
                                 f"(table '{fig.table}' needs it)")
    return devs, by


def hidden_cell(fig, *keys):
    """A hidden fraction (or an efficiency) over rounds, as the bench gave it:
    median and range, or "noise" when every round was left out as noise."""
    kept = fig.need(*keys, "rounds", kind="number")
    if kept == 0:
        return f"noise ({fig.need(*keys, 'noise_rounds', kind='number')} of " \
               f"{fig.need('result', 'repeats', kind='number')})"
    med = fig.need(*keys, "median", kind="number")
    lo, hi = fig.need(*keys, "min", kind="number"), fig.need(*keys, "max", kind="number")
    cell = f"{med:.2f}" if kept == 1 else f"{med:.2f} ({lo:.2f}–{hi:.2f})"
    noise = fig.need(*keys, "noise_rounds", kind="number")
    return cell + (f", {noise} noise" if noise else "")



def ratios_lines(fig):
    """The lines under a comparison table: "Ratios: a 1.23x; b 0.98x." from
    the result's "ratios", or nothing when it has none."""
    ratios = fig.need("result", "ratios", kind="dict")
    if not ratios:
        return []
    return ["", "Ratios: " + "; ".join(
        f"{k} {fig.need('result', 'ratios', k, kind='number'):.2f}x" for k in ratios) + "."]

def paired_ratio(fig, run, base):
    """run's speed over base's: the median over rounds of each round's own
    ratio (base's ms per step over run's), from the runs' per-round times."""
    a = fig.need("result", "runs", run, "ms_per_step_rounds", kind="list")
    b = fig.need("result", "runs", base, "ms_per_step_rounds", kind="list")
    if len(a) != len(b) or not a:
        raise TableError(f"{fig.rel}: runs {run} and {base} have different rounds "
                         f"(table '{fig.table}' pairs them)")
    r = sorted(fig.need("result", "runs", base, "ms_per_step_rounds", i, kind="number") /
               fig.need("result", "runs", run, "ms_per_step_rounds", i, kind="number")
               for i in range(len(a)))
    n = len(r)
    return f"{(r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2):.3f}x"


def render_sink_hidden(fig):
    """bench sink's JSON since the hidden fraction (hidden_by_device)."""
    runs = SINK_RUNS + [("serial", "serial")]
    devs, by = sink_devices(fig, runs)
    steps = fig.need("result", "steps", kind="number")
    reps = fig.need("result", "repeats", kind="number")
    rows = []
    for d in devs:
        sps = {n: fig.need("result", "runs", by[d][n], "samples_per_s", kind="number")
               for n, _ in runs}
        eff = (hidden_cell(fig, "result", "cpu_bound_by_device", d, "sink_full")
               if fig.opt("result", "cpu_bound_by_device", d) is not None else "-")
        rows.append([d] + [num(sps[n]) for n, _ in runs] +
                    [hidden_cell(fig, "result", "hidden_by_device", d, "sink_full"),
                     hidden_cell(fig, "result", "hidden_by_device", d, "serial"), eff,
                     paired_ratio(fig, by[d]["sink_full"], by[d]["nonsink"])])
    out = provenance(fig)
    lo, hi = (fig.need("result", "hidden_noise_range", i, kind="number") for i in (0, 1))
    out.append(f"LeNet5, batch 32, {steps} steps per run; samples/s, medians of {reps} "
               f"rounds; each run a fresh model, the order rotating by round; compute only "
               f"cycles {fig.need('result', 'compute_batches', kind='number')} real batches. "
               f"h: the hidden fraction (T_compute + T_data − T_run) / min(T_compute, T_data) "
               f"of each round, median (range); 0 serial, 1 the shorter part entirely hidden; "
               f"rounds outside [{lo}, {hi}] are noise and left out. CPU-time bound: "
               f"max(T_compute, T_data, (W_compute + W_data) / CPUs) / T_run, W the runs' CPU "
               f"time.")
    out.append("")
    out += table(["device"] + [t for _, t in runs] +
                 ["h, sink −1", "h, serial", "CPU-time bound, sink −1",
                  "sink −1 / non-sink, paired median"],
                 rows)
    return out


def render_sink(fig):
    if fig.opt("result", "hidden_by_device") is not None:
        return render_sink_hidden(fig)
    devs, by = sink_devices(fig)
    steps = fig.need("result", "steps", kind="number")
    reps = fig.need("result", "repeats", kind="number")
    rows = []
    for d in devs:
        sps = {n: fig.need("result", "runs", by[d][n], "samples_per_s", kind="number")
               for n, _ in SINK_RUNS}
        eff = fig.need("result", "overlap_by_device", d, kind="number")
        rows.append([d] + [num(sps[n]) for n, _ in SINK_RUNS] +
                    [f"{eff:.3f}", f"{sps['sink_full'] / sps['nonsink']:.3f}x"])
    out = provenance(fig)
    out.append(f"LeNet5, batch 32, {steps} steps per run; samples/s, medians of {reps} "
               f"rounds. Overlap: max(data only, compute only) / sink, in time.")
    out.append("")
    out += table(["device"] + [t for _, t in SINK_RUNS] + ["overlap", "sink −1 / non-sink"], rows)
    return out


def render_sink_bus(fig):
    """bench sink's bus model on each sim item: predicted against measured."""
    bus = fig.need("result", "bus_model_by_device", kind="dict")
    if not bus:
        raise TableError(f"{fig.rel}: no sim item in result.bus_model_by_device "
                         f"(table '{fig.table}' needs one)")
    rows, within, strong = [], True, []
    for d in bus:
        def v(k, kind="number"):
            return fig.need("result", "bus_model_by_device", d, k, kind=kind)
        ho = fig.opt("result", "bus_model_by_device", d, "handover_ms")
        pred, meas = v("predicted_ratio"), v("measured_ratio")
        diff = meas / pred - 1.0
        within = within and abs(diff) <= 0.10
        if pred >= 1.6:
            strong.append(meas >= 1.5)
        rows.append([d, num(v("launch_ms"), 3), num(v("copy_ms"), 3),
                     "not measured" if ho is None else num(ho, 3),
                     f"{num(v('nonsink_model_ms_per_step'), 3)} / "
                     f"{num(v('nonsink_ms_per_step'), 3)}",
                     num(v("saving_ms_per_step"), 3), f"{pred:.2f}x", f"{meas:.2f}x",
                     f"{100.0 * diff:+.0f}%"])
    out = provenance(fig)
    out.append(f"LeNet5, batch 32, {fig.need('result', 'steps', kind='number')} steps per run, "
               f"medians of {fig.need('result', 'repeats', kind='number')} rotating rounds; ms. "
               f"Predicted: the bus model's non-sink over sink (sink_size 1000) time per step; "
               f"measured: the median of each round's own non-sink over sink_size 1000 ratio.")
    out.append("")
    out += table(["device", "launch", "copy", "hand-over", "non-sink step: model / measured",
                  "saved a step", "predicted", "measured", "difference"], rows)
    out.append("")
    out.append(f"Measured within 10% of predicted at every latency: "
               f"{'met' if within else 'NOT met'}. At least 1.5x where at least 1.6x is "
               f"predicted: " + ("no such item" if not strong else
                                 "met" if all(strong) else "NOT met") + ".")
    return out


def render_sink_runs(fig):
    new = fig.opt("result", "hidden_by_device") is not None
    runs = SINK_RUNS + ([("serial", "serial reference")] if new else [])
    devs, by = sink_devices(fig, runs)
    rows = []
    for d in devs:
        for n, title in runs:
            i = by[d][n]
            cpu = ([num(fig.need("result", "runs", i, "cpu_ms_per_step", kind="number"), 4)]
                   if new else [])
            rows.append([d, title,
                         num(fig.need("result", "runs", i, "samples_per_s", kind="number")),
                         num(fig.need("result", "runs", i, "ms_per_step", kind="number"), 4)] +
                        cpu +
                        [num(fig.need("result", "runs", i, "interactions", kind="number")),
                         num(fig.need("result", "runs", i, "getnext_wait_ms", kind="number"), 1),
                         num(fig.need("result", "runs", i, "channel_full_ms", kind="number"), 1)])
    out = provenance(fig)
    line = (f"Thread budget: {fig.need('result', 'thread_budget', kind='str')}. "
            f"Transfer: {fig.need('result', 'transfer', kind='str')}.")
    if new:
        line += f" OpenBLAS core: {fig.need('result', 'blas_core', kind='str')}."
    out.append(line)
    out.append("")
    out += table(["device", "run", "samples/s", "ms/step"] + (["CPU ms/step"] if new else []) +
                 ["interactions", "GetNext wait ms", "channel full ms"], rows,
                 ["---", "---"] + ["--:"] * (6 if new else 5))
    return out


def stage_rows(fig, *base):
    stages = fig.need(*base, kind="list")
    rows = []
    for i, _ in enumerate(stages):
        def f(k, kind="number"):
            return fig.need(*base, i, k, kind=kind)
        name, threads, rows_n, elapsed = f("name", "str"), f("threads"), f("rows"), f("elapsed_ms")
        rate = rows_n / (elapsed / 1e3) if elapsed > 0 else 0.0
        cap = f("capacity")
        queue = f"{f('occupancy'):.1f}/{cap}" if cap > 0 else "-"
        if threads == 0:
            rows.append([name, "-", num(rows_n), num(rate), "(in the next stage's time)", "", "",
                         queue])
            continue
        whole = f("thread_ms") if f("thread_ms") > 0 else threads * elapsed
        pct = (lambda v: f"{100.0 * v / whole:.1f}") if whole > 0 else (lambda v: "0.0")
        rows.append([name, threads, num(rows_n), num(rate), pct(f("busy_ms")),
                     pct(f("wait_input_ms")), pct(f("blocked_output_ms")), queue])
    return table(["stage", "threads", "rows", "rows/s", "busy %", "waiting %", "blocked %",
                  "queue"], rows, ["---"] + ["--:"] * 7)


def render_sink_stages(fig):
    out = provenance(fig)
    devs = fig.need("result", "stages_by_device", kind="dict")
    for d in devs:
        out.append(f"Stages of the last \"sink, sink_size -1\" run on {d}:")
        out.append("")
        out += stage_rows(fig, "result", "stages_by_device", d)
        out.append("")
        out.append(f"Verdict: {fig.need('result', 'verdict_by_device', d, kind='str')}")
        out.append("")
    return out[:-1]


# --- sluice bench pipeline ----------------------------------------------------

def render_pipeline(fig):
    runs = fig.need("result", "runs", kind="list")
    epochs = fig.need("result", "epochs", kind="number")
    rows = []
    for i, _ in enumerate(runs):
        def f(*k, kind="number"):
            return fig.need("result", "runs", i, *k, kind=kind)
        every = f("images_per_s_all", kind="list")
        rows.append([f("workers"), f("threads"), num(f("images_per_s")),
                     " / ".join(num(fig.need("result", "runs", i, "images_per_s_all", j,
                                             kind="number")) for j in range(len(every))),
                     num(f("first_batch_ms"), 1), num(f("consumer_wakeups_per_epoch"), 1),
                     mib(f("pool", "peak_in_use_bytes")), num(f("pool", "system_allocs"))])
    out = provenance(fig)
    nodes = [n.strip() for n in fig.need("result", "pipeline", kind="str").splitlines()
             if n.strip()]
    out.append(f"Pipeline ({fig.need('result', 'kind', kind='str')}, {epochs} epoch(s) per "
               f"run): " + " → ".join(f"`{n}`" for n in nodes) + ". Images/s, the median of "
               f"the runs listed.")
    out.append("")
    out += table(["workers", "threads", "images/s", "runs", "first batch ms",
                  "consumer wake-ups / epoch", "pool peak in use", "pool blocks from system"],
                 rows)
    out.append("")
    line = (f"One-time load (not timed): {num(fig.need('result', 'load_ms', kind='number'), 1)} "
            f"ms. Peak RSS of the process: "
            f"{fig.need('result', 'peak_rss_bytes', kind='number') / 1e6:.1f} MB.")
    if fig.opt("result", "machine_scaling") is not None:
        t = fig.need("result", "machine_scaling", "threads", kind="number")
        r = fig.need("result", "machine_scaling", "ratio", kind="number")
        line += (f" On this machine {t} threads of independent work (a compute loop) ran "
                 f"{r:.2f}x as fast as one: the most {t} workers can gain.")
    out.append(line)
    return out


def render_pipeline_stages(fig):
    out = provenance(fig)
    runs = fig.need("result", "runs", kind="list")
    for i, _ in enumerate(runs):
        w = fig.need("result", "runs", i, "workers", kind="number")
        out.append(f"Stages of the last run with {w} worker(s):")
        out.append("")
        out += stage_rows(fig, "result", "runs", i, "stages")
        out.append("")
        out.append(f"Verdict: {fig.need('result', 'runs', i, 'verdict', kind='str')}")
        out.append("")
    return out[:-1]


# --- sluice bench train -------------------------------------------------------

def render_train(fig):
    def runs(key):
        vals = fig.need("result", key, kind="list")
        return " / ".join(num(fig.need("result", key, j, kind="number")) for j in range(len(vals)))
    nb = fig.opt("result", "compute_batches")
    on = (f"{nb:,} real batches cycled" if isinstance(nb, int) and nb > 0
          else "one batch reused")
    rows = [[f"compute, GRAPH ({on})",
             num(fig.need("result", "compute_graph_samples_per_s", kind="number")),
             runs("compute_graph_runs")],
            [f"compute, PYNATIVE ({on})",
             num(fig.need("result", "compute_pynative_samples_per_s", kind="number")),
             runs("compute_pynative_runs")]]
    if fig.opt("result", "end_to_end_samples_per_s") is not None:
        rows.append([f"end to end, non-sink ({fig.need('result', 'workers', kind='number')} "
                     f"pipeline worker(s))",
                     num(fig.need("result", "end_to_end_samples_per_s", kind="number")),
                     runs("end_to_end_runs")])
    out = provenance(fig)
    out.append(f"{fig.need('result', 'model', kind='str')}, batch "
               f"{fig.need('result', 'batch', kind='number')}, "
               f"{fig.need('result', 'threads', kind='number')} compute thread(s), "
               f"{fig.need('result', 'blas_threads', kind='number')} OpenBLAS; "
               f"{fig.need('result', 'steps', kind='number')} steps per compute run; "
               f"samples/s, medians of {fig.need('result', 'repeats', kind='number')} runs. "
               f"Thread budget: {fig.need('result', 'thread_budget', kind='str')}.")
    out.append("")
    out += table(["run", "samples/s", "runs"], rows)
    out.append("")
    out.append(f"Memory: GRAPH arena "
               f"{mib(fig.need('result', 'graph_arena_bytes', kind='number'))}, PYNATIVE peak "
               f"{mib(fig.need('result', 'pynative_peak_bytes', kind='number'))}.")
    return out


SUBNORMAL_RUNS = [("fresh_flush", "fresh, flush (default)"), ("trained_flush", "trained, flush (default)"),
                  ("fresh_keep", "fresh, keep"), ("trained_keep", "trained, keep")]


def render_subnormal(fig):
    def runs(key):
        vals = fig.need("result", key + "_runs", kind="list")
        return " / ".join(num(fig.need("result", key + "_runs", j, kind="number"), 4)
                          for j in range(len(vals)))
    rows = [[label, num(fig.need("result", key + "_ms_per_step", kind="number"), 4), runs(key)]
            for key, label in SUBNORMAL_RUNS]
    flush = fig.need("result", "slowdown_flush", kind="number")
    keep = fig.need("result", "slowdown_keep", kind="number")
    goal = fig.need("result", "goal", kind="number")
    out = provenance(fig)
    out.append(f"LeNet5, batch {fig.need('result', 'batch', kind='number')}, "
               f"{fig.need('result', 'threads', kind='number')} compute thread(s); "
               f"{fig.need('result', 'batches', kind='number')} batches of the MNIST train split "
               f"cycled; trained {fig.need('result', 'train_steps', kind='number'):,} steps "
               f"without flushing (loss {fig.need('result', 'loss_before', kind='number'):.3g} "
               f"to {fig.need('result', 'loss_after', kind='number'):.2g}), leaving "
               f"{fig.need('result', 'subnormal_params', kind='number'):,} parameters and "
               f"{fig.need('result', 'subnormal_accumulators', kind='number'):,} momentum values "
               f"subnormal of {fig.need('result', 'values', kind='number'):,}; "
               f"{fig.need('result', 'steps', kind='number')} steps per run, ms per step, medians "
               f"of {fig.need('result', 'repeats', kind='number')} rotating rounds.")
    out.append("")
    out += table(["start, setting", "ms / step", "runs"], rows)
    out.append("")
    out.append(f"Trained over fresh: {flush:.3f}x with flushing (the default; goal at most "
               f"{goal:.2f}x: {'met' if flush <= goal else 'NOT met'}), {keep:.3f}x keeping "
               f"subnormals.")
    return out


def render_train_ops(fig):
    ops = fig.need("result", "per_op_ms_per_step", kind="dict")
    gflops = fig.need("result", "per_op_gflops", kind="dict")
    sgemm = fig.need("result", "sgemm_1024_gflops_per_thread", kind="number")
    peak = fig.opt("result", "fma_peak_gflops_per_thread")  # absent before it was measured
    threads = fig.need("result", "threads", kind="number")
    total = sum(fig.need("result", "per_op_ms_per_step", k, kind="number") for k in ops)
    rows = []
    for k in ops:
        ms = fig.need("result", "per_op_ms_per_step", k, kind="number")
        gf = fig.need("result", "per_op_gflops", k, kind="number") if k in gflops else None
        of_sgemm = (f"{100.0 * gf / threads / sgemm:.0f}%"
                    if gf is not None and sgemm > 0 else "-")
        of_peak = ([f"{100.0 * gf / threads / peak:.0f}%" if gf is not None and peak > 0
                    else "-"] if peak is not None else [])
        rows.append([k, f"{ms:.4f}", f"{100.0 * ms / total:.1f}%" if total > 0 else "-",
                     num(gf, 1)] + of_peak + [of_sgemm])
    rows.append(["total", f"{total:.4f}", "", ""] + ([""] if peak is not None else []) + [""])
    out = provenance(fig)
    line = ("Where a GRAPH step's time goes: ms per step over all runs; GFLOPS of the ops "
            "that multiply matrices, and per compute thread ")
    if peak is not None:
        line += (f"against the peak FMA rate of one thread ({peak:.1f} GFLOPS, by sluice's own "
                 f"loop) and ")
    line += ("against a 1024^3 sgemm on one OpenBLAS thread (" +
             (f"{sgemm:.1f} GFLOPS, measured in the same rounds" if sgemm > 0
              else "not measured with more than one OpenBLAS thread") + ")")
    core = fig.opt("result", "blas_core")
    line += f"; OpenBLAS core {core}." if isinstance(core, str) else "."
    out.append(line)
    out.append("")
    out += table(["op", "ms / step", "share", "GFLOPS"] +
                 (["of peak FMA per thread"] if peak is not None else []) +
                 ["of sgemm per thread"], rows)
    return out


# --- the PyTorch comparisons (figures.sh --with-torch) -------------------------

def render_torch_train(fig):
    cfgs = fig.need("result", "configs", kind="list")
    rows = []
    for i, _ in enumerate(cfgs):
        def f(k, kind="number"):
            return fig.need("result", "configs", i, k, kind=kind)
        blas = fig.opt("result", "configs", i, "openblas_threads")
        rows.append([f"torch, compute only: {f('config', 'str')}", num(blas) if blas is not None
                     else "?", num(f("samples_per_s"))])
    if fig.opt("result", "e2e") is not None:
        rows.append([f"torch, end to end: {fig.need('result', 'e2e', 'config', kind='str')}", "",
                     num(fig.need("result", "e2e", "samples_per_s", kind="number"))])
    for key, title in (("compute_graph_samples_per_s", "sluice, compute GRAPH"),
                       ("compute_pynative_samples_per_s", "sluice, compute PYNATIVE"),
                       ("end_to_end_samples_per_s", "sluice, end to end")):
        if key == "end_to_end_samples_per_s" and fig.opt("result", "e2e") is None:
            continue
        rows.append([title, "", num(fig.need("result", "sluice", key, kind="number"))])
    out = provenance(fig)
    out.append(f"LeNet5 training, batch {fig.need('result', 'batch', kind='number')}; samples/s, "
               f"medians of {fig.need('result', 'repeats', kind='number')} interleaved rounds.")
    out.append("")
    out += table(["configuration", "OpenBLAS threads", "samples/s"], rows)
    return out + ratios_lines(fig)


def render_torch_sink(fig):
    cfgs = fig.need("result", "configs", kind="list")
    rows = []
    for i, _ in enumerate(cfgs):
        def f(k, kind="number"):
            return fig.need("result", "configs", i, k, kind=kind)
        best = " (best)" if fig.opt("result", "configs", i, "best") is True else ""
        rows.append([f"torch: {f('config', 'str')}{best}", num(f("samples_per_s")),
                     num(f("ms_per_step"), 4)])
    for key, title in (("sink_full", "sluice, sink −1"), ("sink_1000", "sluice, sink 1000"),
                       ("nonsink", "sluice, non-sink")):
        rows.append([title, num(fig.need("result", "sluice", key, kind="number")), ""])
    out = provenance(fig)
    out.append(f"LeNet5 end to end, batch {fig.need('result', 'batch', kind='number')}, "
               f"{fig.need('result', 'steps', kind='number')} steps per run; samples/s, medians "
               f"of {fig.need('result', 'repeats', kind='number')} interleaved rounds "
               f"(sluice: `bench sink --devices cpu:0`, in the same rounds).")
    out.append("")
    out += table(["configuration", "samples/s", "ms/step"], rows)
    ratios = fig.need("result", "ratios", kind="dict")
    out.append("")
    out.append("Against the best PyTorch configuration: " + "; ".join(
        f"{k.replace('_over_best_torch', '')} {fig.need('result', 'ratios', k, kind='number'):.2f}x"
        for k in ratios) + ".")
    return out


def render_torch_preset(fig):
    """bench/torch_pipeline.py --image-folder DIR --preset P: the preset
    against torchvision's transforms (PIL, DataLoader) and against decoding
    the same files whole on one core."""
    res = fig.need("result", "results", kind="list")
    rows, best_torch = [], 0.0
    for i, _ in enumerate(res):
        v = fig.need("result", "results", i, "images_per_s", kind="number")
        best_torch = max(best_torch, v)
        rows.append([f"torchvision transforms (PIL), {fig.need('result', 'results', i, 'config', kind='str')}",
                     num(v)])
    med = fig.need("result", "sluice", "medians", kind="dict")
    best = 0.0
    for w in sorted(med, key=int):
        v = fig.need("result", "sluice", "medians", w, "images_per_s", kind="number")
        best = max(best, v)
        rows.append([f"sluice, {w} worker{'s' if w != '1' else ''}", num(v)])
    pil = fig.need("result", "pil_decode", "images_per_s", kind="number")
    rows.append(["decode only, whole files: PIL, 1 core", num(pil)])
    dec = fig.opt("result", "sluice_decode", "medians")
    if isinstance(dec, dict):
        for w in sorted(dec, key=int):
            rows.append([f"decode only, whole files: sluice, {w} worker{'s' if w != '1' else ''}",
                         num(fig.need("result", "sluice_decode", "medians", w, "images_per_s",
                                      kind="number"))])
    cores = fig.need("machine", "nproc", kind="number")
    out = provenance(fig)
    out.append(f"`{fig.need('result', 'preset', kind='str')}` on {fig.need('result', 'files', kind='number'):,} "
               f"JPEGs ({fig.need('result', 'classes', kind='number')} classes), batch "
               f"{fig.need('result', 'batch', kind='number')}; images/s, medians of "
               f"{fig.need('result', 'repeats', kind='number')} runs, each an epoch from the "
               f"iterator's start; torch {fig.need('result', 'torch', kind='str')}, PIL "
               f"{fig.need('result', 'pil', kind='str')}, 1 torch thread per worker.")
    out.append("")
    out += table(["configuration", "images/s"], rows)
    out.append("")
    out.append(f"sluice's best over torchvision's best: {best / best_torch:.2f}x; over PIL's "
               f"whole-file decode on one core times the {cores} cores: "
               f"{best / (pil * cores):.2f}x.")
    return out


def render_python_dataset(fig):
    med = fig.need("result", "medians", kind="dict")
    rows = []
    for c in med:
        def f(k, kind="number"):
            return fig.need("result", "medians", c, k, kind=kind)
        rss = f"{f('peak_rss_bytes') / 1e6:.0f} MB"
        worker = fig.opt("result", "medians", c, "worker_peak_rss_bytes")
        if worker and c.startswith("dataloader") and c != "dataloader-0":
            rss += f" (+ workers of {worker / 1e6:.0f} MB)"
        rows.append([c, num(f("images_per_s")), num(f("first_batch_ms"), 1), rss])
    out = provenance(fig)
    out.append(f"One epoch of the seeds' MNIST pipeline (60000 images); sluice with "
               f"{fig.need('result', 'workers', kind='number')} workers per map; images/s, "
               f"medians of {fig.need('result', 'rounds', kind='number')} rounds, each "
               f"configuration in a fresh process.")
    out.append("")
    out += table(["configuration", "images/s", "first batch ms", "peak RSS"], rows)
    return out + ratios_lines(fig)


PYTHON_SOURCES = [("generator", "GeneratorDataset"), ("numpy-slices", "NumpySlicesDataset"),
                  ("dataloader-0", "DataLoader, 0 workers"), ("dataloader-2", "DataLoader, 2 workers")]


def render_python_sources(fig):
    cfgs = fig.need("result", "configs", kind="dict")
    base = cfgs.get("dataloader-0", {}).get("median_samples_per_s")
    rows = []
    for key, label in PYTHON_SOURCES:
        if key not in cfgs:
            continue
        v = fig.need("result", "configs", key, "median_samples_per_s", kind="number")
        runs = fig.need("result", "configs", key, "runs", kind="list")
        rows.append([label, num(v), f"{v / base:.2f}x" if base else "-",
                     " / ".join(num(x) for x in runs)])
    out = provenance(fig)
    out.append(f"One shuffled epoch of {fig.need('result', 'samples', kind='number'):,} samples "
               f"(a 28x28 uint8 image and an int label) from one map-style Python dataset, batch "
               f"{fig.need('result', 'batch', kind='number')}; samples/s, medians of "
               f"{fig.need('result', 'rounds', kind='number')} rotating rounds, one process.")
    out.append("")
    out += table(["configuration", "samples/s", "against DataLoader, 0 workers", "runs"], rows)
    return out


def render_torch_pipeline(fig):
    res = fig.need("result", "results", kind="list")
    rows = []
    for i, _ in enumerate(res):
        rows.append([f"torch: {fig.need('result', 'results', i, 'config', kind='str')}",
                     num(fig.need("result", "results", i, "images_per_s", kind="number")),
                     num(fig.opt("result", "results", i, "first_batch_ms"), 1)])
    med = fig.need("result", "sluice", "medians", kind="dict")
    for w in med:
        rows.append([f"sluice, {w} worker(s)",
                     num(fig.need("result", "sluice", "medians", w, "images_per_s",
                                  kind="number")),
                     num(fig.opt("result", "sluice", "medians", w, "first_batch_ms"), 1)])
    out = provenance(fig)
    out.append(f"One epoch of the seeds' MNIST pipeline, batch "
               f"{fig.need('result', 'batch', kind='number')}; images/s, medians of "
               f"{fig.need('result', 'repeats', kind='number')} runs, worker start-up included.")
    out.append("")
    out += table(["configuration", "images/s", "first batch ms"], rows)
    return out + ratios_lines(fig)


# name -> (figures file, renderer, made by figures.sh without options)

# --- data parallel: bench devices, bench dist, the ring model ----------------

def render_dist(fig):
    r = lambda *k: fig.need("result", *k, kind="number")
    ranks, n = r("ranks"), len(fig.need("result", "ranks_runs", kind="list"))
    rows = [[f"sluice, mpirun -np {ranks:.0f}: {r('threads') / ranks:.0f} thread and batch "
             f"{r('global_batch') / ranks:.0f} a rank", num(r("ranks_samples_per_s")), "1.00"],
            [f"sluice, one process: {r('threads'):.0f} threads, batch {r('global_batch'):.0f}",
             num(r("one_process_samples_per_s")),
             f"{r('ranks_samples_per_s') / r('one_process_samples_per_s'):.2f}"]]
    t = fig.opt("result", "torch_ddp_samples_per_s")
    if t is not None:
        rows.append([f"torch DDP (gloo), {ranks:.0f} processes", num(t),
                     f"{r('ranks_samples_per_s') / t:.2f}"])
    out = provenance(fig)
    out.append(f"LeNet5 on Fashion-MNIST in sink mode, global batch {r('global_batch'):.0f}, "
               f"{r('steps'):.0f} global steps a run; samples/s, medians of {n} rounds whose "
               f"order rotates.")
    out.append("")
    out += table(["configuration", "samples/s", "ranks' samples/s ÷ this"], rows)
    out.append("")
    out.append(f"Across the ranks a global step took {r('step_ms'):.3f} ms, of which the "
               f"allreduce ({r('allreduce_bytes'):,.0f} bytes: MPI_Allreduce and the wait for "
               f"the slower rank) {r('allreduce_us_per_step'):.1f} µs "
               f"({100 * r('allreduce_share'):.1f}%).")
    return out


def ring_ms(nbytes, ranks, gbit_s, latency_us):
    """A ring allreduce's time: 2(N-1)/N x bytes / bandwidth + 2(N-1) x latency."""
    if ranks < 2:
        return 0.0
    return (2 * (ranks - 1) / ranks * nbytes * 8 / (gbit_s * 1e9) * 1e3
            + 2 * (ranks - 1) * latency_us / 1e3)


# (name, gradient bytes, compute ms a step or None: the measured one)
RING_MODELS = [("LeNet5 (measured step)", None, None),
               ("ResNet-50-sized, 25.6 M parameters", 25.6e6 * 4, 180.0)]
RING_NETS = [(25.0, 10.0), (100.0, 5.0)]


def render_ring_model(fig):
    r = lambda *k: fig.need("result", *k, kind="number")
    lenet_bytes = r("allreduce_bytes")
    compute = r("step_ms") - r("allreduce_us_per_step") / 1e3
    if not compute > 0:
        raise TableError(f"{fig.rel}: step_ms is not more than the allreduce")
    rows = []
    for name, nbytes, ms in RING_MODELS:
        nbytes = lenet_bytes if nbytes is None else nbytes
        ms = compute if ms is None else ms
        for gbit, lat in RING_NETS:
            cells = [name, f"{ms:.3f}" if ms < 10 else f"{ms:.0f}", f"{gbit:.0f} Gbit/s, {lat:.0f} µs"]
            for ranks in (8, 64, 512):
                t = ring_ms(nbytes, ranks, gbit, lat)
                cells.append(f"{100 * ms / (ms + t):.0f}% ({t:.3f} ms)" if t < 10
                             else f"{100 * ms / (ms + t):.0f}% ({t:.0f} ms)")
            rows.append(cells)
    out = provenance(fig)
    out.append(f"Predicted scaling efficiency, compute ÷ (compute + ring allreduce), with no "
               f"overlap of the allreduce and backward (sluice reduces after backward). LeNet5's "
               f"compute is the measured step less its allreduce ({compute:.3f} ms) and its "
               f"{lenet_bytes:,.0f} bytes; the ResNet-50-sized row assumes 180 ms of compute a "
               f"step (an assumption, about 355 images/s at batch 64), 102.4 MB of fp32 "
               f"gradients. In brackets: the allreduce's modelled time.")
    out.append("")
    out += table(["model", "compute ms", "network", "8 ranks", "64 ranks", "512 ranks"], rows)
    return out


def render_ring_check(fig):
    """devices_net.json against devices.json: the modelled network's cost,
    measured in process, beside the model."""
    base_path = os.path.join(os.path.dirname(fig.path), "devices.json")
    if not os.path.exists(base_path):
        raise TableError(f"{os.path.relpath(base_path, ROOT)}: no such file (table 'ring-check' "
                         f"reads it); bench/figures.sh BUILDDIR devices writes it")
    base = Figures(base_path, "ring-check")
    r = lambda f, *k: f.need("result", *k, kind="number")
    gbit, lat = r(fig, "sim_network_gbit_s"), r(fig, "sim_network_latency_us")
    if not gbit > 0:
        raise TableError(f"{fig.rel}: sim_network_gbit_s is not > 0")
    nbytes, ndev = r(fig, "allreduce_bytes"), len(fig.need("result", "devices", kind="str").split(","))
    model = ring_ms(nbytes, ndev, gbit, lat)
    added = r(fig, "allreduce_ms_per_step") - r(base, "allreduce_ms_per_step")
    rows = [["allreduce ms a step, no network", f"{r(base, 'allreduce_ms_per_step'):.3f}", ""],
            [f"allreduce ms a step, {gbit:g} Gbit/s and {lat:g} µs modelled",
             f"{r(fig, 'allreduce_ms_per_step'):.3f}", ""],
            ["the network's share: measured, modelled", f"{added:.3f}", f"{model:.3f}"],
            ["samples/s, no network / network",
             num(r(base, "devices_samples_per_s")), num(r(fig, "devices_samples_per_s"))]]
    out = provenance(fig)
    out.append(f"{ndev} devices in one process, {nbytes:,.0f} bytes an allreduce; the "
               f"in-process communicator made to take at least the ring's time on the modelled "
               f"network (`--sim-network`), against the same run without (`{base.rel}`).")
    out.append("")
    out += table(["", "measured", "model"], rows)
    return out


TABLES = {
    "sink": ("sink.json", render_sink, True),
    "sink-runs": ("sink.json", render_sink_runs, True),
    "sink-stages": ("sink.json", render_sink_stages, True),
    "sink-bus": ("sink_bus.json", render_sink_bus, True),
    "sink-jpeg": ("sink_jpeg.json", render_sink, True),
    "pipeline": ("pipeline.json", render_pipeline, True),
    "pipeline-stages": ("pipeline.json", render_pipeline_stages, True),
    "train": ("train.json", render_train, True),
    "train-ops": ("train.json", render_train_ops, True),
    "subnormal": ("subnormal.json", render_subnormal, False),
    "torch-train": ("torch_train.json", render_torch_train, False),
    "torch-sink": ("torch_sink.json", render_torch_sink, False),
    "python-dataset": ("python_dataset.json", render_python_dataset, False),
    "torch-pipeline": ("torch_pipeline.json", render_torch_pipeline, False),
    "python-sources": ("python_sources.json", render_python_sources, False),
    "torch-imagenet-train": ("torch_imagenet_train.json", render_torch_preset, False),
    "torch-imagenet-eval": ("torch_imagenet_eval.json", render_torch_preset, False),
    "dist": ("torch_dist.json", render_dist, False),
    "ring-model": ("torch_dist.json", render_ring_model, False),
    "ring-check": ("devices_net.json", render_ring_check, False),
}


def render(name, figdir):
    fname, fn, default = TABLES[name]
    path = os.path.join(figdir, fname)
    rel = os.path.relpath(path, ROOT)
    head = [f"<!-- generated by bench/tables.py from {rel}; edit that script, not this -->", ""]
    if not os.path.exists(path):
        if default:
            raise TableError(f"{rel}: no such file (table '{name}' reads it); "
                             f"bench/figures.sh BUILDDIR writes it")
        return head + [f"Not generated here yet: `bench/figures.sh BUILDDIR --with-torch` "
                       f"writes `{rel}`, then this table.", ""]
    return head + fn(Figures(path, name)) + [""]


def rewrite(text, doc, figdir):
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        name, what = m.groups()
        where = f"{os.path.relpath(doc, ROOT)}:{i + 1}"
        if what == "end":
            raise TableError(f"{where}: 'table:{name} end' without its begin")
        if name not in TABLES:
            raise TableError(f"{where}: no table named '{name}' (known: "
                             f"{', '.join(sorted(TABLES))})")
        end = f"<!-- table:{name} end -->"
        j = i + 1
        while j < len(lines) and lines[j] != end:
            if MARKER.match(lines[j]):
                raise TableError(f"{os.path.relpath(doc, ROOT)}:{j + 1}: marker inside "
                                 f"table:{name}")
            j += 1
        if j == len(lines):
            raise TableError(f"{where}: 'table:{name} begin' without its end")
        out += [lines[i]] + render(name, figdir) + [end]
        i = j + 1
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description="Write the benchmark tables of docs/*.md from "
                                 "docs/figures/*.json.")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a doc differs from what the figures give")
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs"), help="folder of the .md files")
    ap.add_argument("--figures", default=None, help="folder of the JSON files "
                    "(default: DOCS/figures)")
    a = ap.parse_args()
    figdir = a.figures or os.path.join(a.docs, "figures")
    new = {}
    try:
        for doc in sorted(glob.glob(os.path.join(a.docs, "*.md"))):
            with open(doc) as f:
                text = f.read()
            result = rewrite(text, doc, figdir)
            if result != text:
                new[doc] = result
    except TableError as e:
        print(f"tables.py: {e}", file=sys.stderr)
        print("tables.py: no file changed", file=sys.stderr)
        return 1
    if a.check:
        for doc in new:
            print(f"tables.py: {os.path.relpath(doc, ROOT)} is not what the figures give "
                  f"(run bench/tables.py)", file=sys.stderr)
        return 1 if new else 0
    for doc, text in new.items():
        tmp = doc + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, doc)
        print(f"tables.py: wrote {os.path.relpath(doc, ROOT)}")
    if not new:
        print("tables.py: every table is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
