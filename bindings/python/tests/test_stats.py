"""Per-stage figures from Python: an iterator's stages while it runs, and
the stages of a model's last sink-mode train, each with the verdict that
says which stage limits throughput (the C side's sl_iterator_get_stage_stats,
sl_model_get_stage_stats and sl_stage_verdict)."""
import os

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train

FIELDS = {"name", "threads", "rows", "elapsed_ms", "busy_ms", "wait_input_ms",
          "startup_wait_ms", "blocked_output_ms", "capacity", "occupancy", "thread_ms"}


def pipeline(root):
    d = ds.MnistDataset(root, usage="train", shuffle=False)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
                          vision.HWC2CHW()], input_columns="image")
    return d.batch(32, drop_remainder=True)


def test_iterator_stages(mnist):
    it = pipeline(mnist).create_tuple_iterator(num_epochs=1)
    batches = sum(1 for _ in zip(range(3), it))
    stats = it.get_stage_stats()
    assert batches == 3
    stages = stats["stages"]
    assert len(stages) >= 2 and all(set(s) == FIELDS for s in stages), stages
    assert stages[-1]["name"] == "consumer" and stages[-1]["rows"] == 3
    assert stages[0]["rows"] >= 96          # the source's rows are samples
    assert stats["verdict"] and "no stages" not in stats["verdict"]
    it.close()
    assert it.get_stage_stats() == {"stages": [], "verdict": "no stages to judge"}


def test_model_stages_after_a_sink_train(mnist):
    network = nn.LeNet5(10)
    model = train.Model(network, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                        nn.Momentum(network.trainable_params(), 0.01, 0.9))
    assert model.stage_stats()["stages"] == []
    model.train(1, pipeline(mnist), dataset_sink_mode=False)
    assert model.stage_stats()["stages"] == []      # non-sink: the host feeds each step
    model.train(2, pipeline(mnist), dataset_sink_mode=True)
    stats = model.stage_stats()
    names = [s["name"] for s in stats["stages"]]
    # on cpu, with compute threads for every CPU, the executor moves the
    # batches itself (the transfer "inline"); elsewhere a transfer thread
    transfer = names[-3]
    assert transfer in ("transfer", "transfer (inline, on the executor)"), names
    assert names[-2:] == ["executor (cpu:0)", "host (callbacks)"], names
    by = {s["name"]: s for s in stats["stages"]}
    assert by["executor (cpu:0)"]["rows"] == 6       # 3 batches an epoch, 2 epochs
    assert by["host (callbacks)"]["rows"] == 2       # one sink an epoch
    assert by[transfer]["capacity"] >= 1
    assert isinstance(stats["verdict"], str) and stats["verdict"]


def test_iterator_autotune(tmp_path):
    """A Python map that sleeps 2 ms per row (time.sleep lets go of the GIL)
    limits throughput on one worker: with autotune=True the engine wakes a
    second and keeps it (sleeping scales), and says so; rows keep their
    order. On one CPU (taskset) workers are capped at 1, and the log says
    the stage can take no more."""
    import time
    from conftest import make_mnist
    root = make_mnist(tmp_path / "mnist", 480, 8)

    def slow(x):
        time.sleep(0.002)
        return x

    d = ds.MnistDataset(root, usage="train", shuffle=False)
    d = d.map(operations=[slow], input_columns="image", num_parallel_workers=1)
    d = d.batch(4, drop_remainder=True, num_parallel_workers=1)
    plain = [int(l) for _, label in d.create_tuple_iterator(num_epochs=1, output_numpy=True)
             for l in label]
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True, autotune=True)
    tuned = [int(l) for _, label in it for l in label]
    log = it.autotune_log()
    assert tuned == plain
    if len(os.sched_getaffinity(0)) < 2:
        # one CPU: workers are capped at the CPUs, and the tuner says so
        assert any("can take no more workers" in line for line in log), log
    else:
        assert any("1 -> 2 workers" in line for line in log), log
        assert any("kept 2 workers" in line for line in log), log
    assert ds.MnistDataset(root).create_tuple_iterator().autotune_log() == []


def test_model_train_autotune(tmp_path):
    """A sink-mode train whose pipeline is slower than the step by design,
    whatever the machine: its one map worker sleeps per row so that a
    batch takes three times the step, as measured on this model and data
    beforehand (5 ms a row at least). What moves batches into the device
    queue waits for it, so the tuner wakes a second worker, and
    Model.autotune_log() says so; without autotune the log is empty."""
    import time
    from conftest import make_mnist
    root = make_mnist(tmp_path / "mnist", 384, 8)
    row_sleep = [0.0]

    def slow(x):
        time.sleep(row_sleep[0])
        return x

    def data(*ops):
        d = ds.MnistDataset(root, usage="train", shuffle=False)
        d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label",
                  num_parallel_workers=1)
        d = d.map(operations=[*ops, vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
                              vision.HWC2CHW()], input_columns="image", num_parallel_workers=1)
        return d.batch(32, drop_remainder=True, num_parallel_workers=1)

    network = nn.LeNet5(10)
    model = train.Model(network, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                        nn.Momentum(network.trainable_params(), 0.01, 0.9))
    assert model.autotune_log() == []
    # The step's time here and now, start-up included (which only makes the
    # rows slower): 4 steps on the same pipeline without the sleep.
    t0 = time.monotonic()
    model.train(1, data().take(4), dataset_sink_mode=True)
    step = (time.monotonic() - t0) / 4
    row_sleep[0] = max(0.005, 3 * step / 32)
    model.train(1, data(slow), dataset_sink_mode=True, autotune=True)
    log = model.autotune_log()
    why = (f"step {step * 1e3:.1f} ms, row {row_sleep[0] * 1e3:.1f} ms", log)
    if len(os.sched_getaffinity(0)) < 2:
        # one CPU: workers are capped at the CPUs, and the tuner says so
        assert any("can take no more workers" in line for line in log), why
    else:
        assert any("-> 2 workers" in line for line in log), why
    model.train(1, data(slow).take(2), dataset_sink_mode=True)
    assert model.autotune_log() == []
