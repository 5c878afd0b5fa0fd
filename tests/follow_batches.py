"""follow_batches.py TRACE: checks a trace.json that `--profile DIR` wrote: it
parses as JSON; at least 3 batches can be followed through every stage
(the map that batched them, the transfer's copy, or its claim of the slot
the map stacked the batch into, GetNext, the step); each stage's slice of
a batch ends before the next stage's could (the chunk is pushed before the
transfer starts, GetNext returns once the transfer is committed,
the step starts after GetNext returns); and steps hold per-op slices.
An inline transfer has no slices of its own (the executor moves each batch
inside its GetNext): a trace without any is followed through the map,
GetNext and the step. Exit status 0 when all hold."""
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
inline = not any(e["ph"] == "X" and e["name"] in ("copy", "claim") for e in ev)
order = [("map", "GetNext", 1), ("GetNext", "step", 0)] if inline else \
    [("map", "transfer", 0), ("transfer", "GetNext", 1), ("GetNext", "step", 0)]
full = [k for k, v in by.items() if len(v) == len(order) + 1]
assert len(full) >= 3, (len(full), list(by.items())[:3])
bad = 0
for k in full:
    v = by[k]
    # each stage ends before the next can: the map's chunk is pushed before
    # the transfer starts, GetNext returns once the transfer is committed,
    # the step starts after GetNext returns (a GetNext may start waiting
    # earlier)
    for a, b, at in order:
        if v[a][1] > v[b][at] + 1e-3:
            bad += 1
            print("out of order", k, a, v[a], b, v[b])
# conv2d alone, or fused (conv2d+relu+max_pool2d, with one compute thread)
ops = [e for e in ev if e["ph"] == "X" and e["name"].startswith("conv2d")]
assert ops, "no per-op slices"
print("batches followed:", len(full), "through", "inline GetNext" if inline else "the transfer",
      "out of order:", bad)
sys.exit(1 if bad else 0)
