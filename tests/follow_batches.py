"""follow_batches.py TRACE: checks a trace.json that `--profile DIR` wrote: it
parses as JSON; at least 3 batches can be followed through every stage
(the map that batched them, the transfer's copy, or its claim of the slot
the map stacked the batch into, GetNext, the step); each stage's slice of
a batch ends before the next stage's could (the chunk is pushed before the
transfer starts, GetNext returns once the transfer is committed,
the step starts after GetNext returns); and steps hold per-op slices.
Exit status 0 when all hold."""
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
def stage(e):
    if e["name"] in ("copy", "claim"):
        return "transfer"
    if e["name"] in ("GetNext", "step"):
        return e["name"]
    if names.get(e["tid"], "").startswith("map"):
        return "map"
    return None
by = {}
for e in ev:
    if e["ph"] != "X" or "args" not in e:
        continue
    s = stage(e)
    if s:
        by.setdefault((e["args"]["epoch"], e["args"]["batch"]), {})[s] = (e["ts"], e["ts"] + e["dur"])
full = [k for k, v in by.items() if len(v) == 4]
assert len(full) >= 3, (len(full), list(by.items())[:3])
bad = 0
for k in full:
    v = by[k]
    # each stage ends before the next can: the map's chunk is pushed before
    # the transfer starts, GetNext returns once the transfer is committed,
    # the step starts after GetNext returns (a GetNext may start waiting
    # earlier)
    for a, b, at in (("map", "transfer", 0), ("transfer", "GetNext", 1),
                     ("GetNext", "step", 0)):
        if v[a][1] > v[b][at] + 1e-3:
            bad += 1
            print("out of order", k, a, v[a], b, v[b])
ops = [e for e in ev if e["ph"] == "X" and e["name"] == "conv2d"]
assert ops, "no per-op slices"
print("batches followed:", len(full), "out of order:", bad)
sys.exit(1 if bad else 0)
