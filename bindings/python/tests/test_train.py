"""Training from Python (sluice.nn, sluice.train, sluice.data_sink): the loss
goes down; sinking and not sinking, GRAPH and PYNATIVE, data_sink calls
of 50 + 50 and one of 100 all give the same parameters, bit for bit, and
they equal what the C library gives (`sluice train --save`, a public-API
program); callbacks are called once per step or per sink; errors,
exceptions in callbacks and Ctrl-C stop training with every thread
joined; the GIL is free while training runs."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train
from conftest import (PRELOAD, baseline, fashion_or_fail, make_mnist, nthreads, python_env,
                      settled)


@pytest.fixture(autouse=True)
def defaults():
    """Every test starts from the default seeds and context."""
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


def create_dataset(data_path, usage="train", batch_size=32, shuffle=True):
    """The seeds' create_dataset with its image operations in one map, as
    `sluice train` builds it: the same values, and (the shuffle's random
    stream follows its position in the chain) the same order."""
    d = ds.MnistDataset(data_path, usage=usage, shuffle=shuffle)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map(operations=[vision.Resize((32, 32), interpolation=vision.Inter.LINEAR),
                          vision.Rescale(1.0 / 255.0, 0.0),
                          vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image")
    if shuffle:
        d = d.shuffle(buffer_size=10000)
    return d.batch(batch_size, drop_remainder=shuffle)


def lenet(lr=0.01, momentum=0.9, metrics=None):
    """The seeds' network, loss and optimizer in a Model."""
    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), lr, momentum)
    return train.Model(network, net_loss, net_opt, metrics=metrics), network


def one_step_cell(lr=0.01):
    network = nn.LeNet5(10)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(network.trainable_params(), lr, 0.9)
    return nn.TrainOneStepCell(nn.WithLossCell(network, loss), opt), network


def values(network):
    return {p.name: p.asnumpy() for p in network.trainable_params()}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == np.float32 and b[name].dtype == np.float32
        assert np.array_equal(a[name], b[name]), f"{name} differs"


class Steps(train.Callback):
    """Records what each hook saw."""

    def __init__(self):
        self.calls = []
        self.steps = []

    def begin(self, run_context):
        self.calls.append("begin")

    def epoch_begin(self, run_context):
        self.calls.append("epoch_begin")

    def step_end(self, run_context):
        p = run_context.original_args()
        self.steps.append((p.cur_epoch_num, p.cur_step_in_epoch, p.cur_step_num,
                           float(p.net_outputs.asnumpy())))

    def epoch_end(self, run_context):
        self.calls.append("epoch_end")

    def end(self, run_context):
        self.calls.append("end")


@pytest.fixture
def small(mnist):
    """The seeds' pipeline over the 100-sample MNIST of conftest: 3 batches
    per epoch."""
    return create_dataset(mnist)


# --- training works, the same way every way --------------------------------------------

@pytest.mark.long
def test_loss_decreases_on_fashion_mnist():
    d = create_dataset(fashion_or_fail()).take(400)
    model, _ = lenet(lr=0.05)
    steps = Steps()
    model.train(1, d, callbacks=[steps], dataset_sink_mode=False)
    losses = [s[3] for s in steps.steps]
    assert len(losses) == 400
    first, last = np.mean(losses[:50]), np.mean(losses[-50:])
    assert first > 2.2 and last < first - 0.5, (first, last)


@pytest.mark.long  # results, checked by the plain build; its threads run sanitized in the short tests
def test_sink_and_no_sink_give_the_same_parameters(small):
    d = small.repeat(20)                      # 60 steps an epoch
    sinking, a = lenet()
    sinking.train(2, d, dataset_sink_mode=True, sink_size=20)        # 40 steps
    feeding, b = lenet()
    feeding.train(1, d.take(40), dataset_sink_mode=False)             # the same 40
    whole, c = lenet()
    whole.train(1, d.take(40), dataset_sink_mode=True)                # one sink of 40
    assert_same(values(a), values(b))
    assert_same(values(a), values(c))
    assert not np.array_equal(values(a)["fc3.bias"], nn.LeNet5().parameters_dict()
                              ["fc3.bias"].asnumpy())                 # it did train


def test_several_devices_train_data_parallel(small):
    """devices=[...]: a global step is one batch per device; sinking or
    not, two devices give the same bits; they train (unlike one device on
    the same batches, which takes twice the steps); bad lists raise."""
    d = small.repeat(20)                      # 60 batches: 30 global steps an epoch
    steps = Steps()
    sinking, a = lenet()
    sinking.train(1, d, callbacks=[steps], dataset_sink_mode=True, sink_size=10,
                  devices=["cpu:0", "cpu:1"])                   # 10 global steps
    assert [st[2] for st in steps.steps] == [10]      # one sink of 10 global steps
    feeding, b = lenet()
    feeding.train(1, d.take(20), dataset_sink_mode=False, devices=["cpu:0", "cpu:1"])
    assert_same(values(a), values(b))
    one, c = lenet()
    one.train(1, d.take(20), dataset_sink_mode=False)
    assert not np.array_equal(values(a)["fc3.bias"], values(c)["fc3.bias"])
    for bad, says in [(["cpu:0", "cpu:0"], "named twice"), (["cpu:0", "sim:1"], "kinds"),
                      (["cpu:1", "cpu:0"], "model's device first")]:
        m, _ = lenet()
        with pytest.raises((ValueError, RuntimeError), match=says):
            m.train(1, d, devices=bad)
    with pytest.raises(TypeError, match="list of device names"):
        lenet()[0].train(1, d, devices=[0, 1])


def test_graph_and_pynative_give_the_same_parameters(small):
    graph, a = lenet()
    graph.train(2, small, dataset_sink_mode=True)
    sluice.set_context(mode=sluice.PYNATIVE_MODE)
    assert sluice.get_context("mode") == sluice.PYNATIVE_MODE
    eager, b = lenet()
    eager.train(2, small, dataset_sink_mode=False)
    assert_same(values(a), values(b))


@pytest.mark.long
def test_parameters_equal_the_c_librarys():
    """`sluice train --seed 7 --max-steps 100 --save` (the C API) and the
    same seeds, pipeline and steps from Python write the same numbers."""
    root = fashion_or_fail()
    cli = os.environ.get("SLUICE_TEST_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("SLUICE_TEST_CLI is not set (run through make check)")
    ckpt = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sluice-pytest-{os.getpid()}.ckpt")
    try:
        subprocess.run([cli, "train", "--data", root, "--seed", "7", "--max-steps", "100",
                        "--no-eval", "--save", ckpt], check=True, capture_output=True)
        from_c = sluice.load_checkpoint(ckpt)
    finally:
        if os.path.exists(ckpt):
            os.unlink(ckpt)
    ds.config.set_seed(7)
    sluice.set_seed(7)
    model, network = lenet()
    model.train(1, create_dataset(root), dataset_sink_mode=True, sink_size=100)
    assert {k for k in from_c if k.startswith("moments.")} == \
        {"moments." + p.name for p in network.trainable_params()}
    assert_same(values(network), {name: from_c[name].asnumpy() for name in values(network)})


def test_data_sink_calls_continue_the_traversal(small):
    d = small.repeat()                              # endless
    step_a, a = one_step_cell()
    step_b, b = one_step_cell()
    step_a._get_model(), step_b._get_model()        # their executors' threads
    base = baseline()
    half = 10 if PRELOAD else 50                    # a sanitizer slows each step 100x
    sink = sluice.data_sink(step_a, d, sink_size=half)
    sink()
    loss_a = sink()
    assert nthreads() > base                        # the pipeline runs until close()
    sink.close()
    assert settled(base) == base
    with sluice.data_sink(step_b, d, sink_size=2 * half) as sink:
        loss_b = sink()
    assert settled(base) == base
    assert isinstance(loss_b, sluice.Tensor) and loss_b.shape == ()
    assert loss_a.item() == loss_b.item() and str(loss_b) == str(np.float32(loss_b.item()))
    assert_same(values(a), values(b))


def test_dataset_helper_yields_once_per_sink(small):
    step, _ = one_step_cell()
    helper = train.DatasetHelper(small, dataset_sink_mode=True, sink_size=5, epoch_num=3)
    net = train.connect_network_with_dataset(step, helper)
    per_epoch = []
    for _ in range(4):                              # the 4th loop has nothing left
        items = [net(*inputs) for inputs in helper]
        per_epoch.append(len(items))
        assert all(isinstance(loss, sluice.Tensor) for loss in items)
    helper.close()
    assert per_epoch == [1, 1, 1, 0]
    assert step._get_model()._c.global_step() == 15
    # without sinking: once per step (3 batches an epoch)
    step, _ = one_step_cell()
    with train.DatasetHelper(small, dataset_sink_mode=False, epoch_num=2) as helper:
        net = train.connect_network_with_dataset(step, helper)
        assert [len([net(*i) for i in helper]) for _ in range(3)] == [3, 3, 0]
    with pytest.raises(RuntimeError, match="connect"):
        iter(train.DatasetHelper(small))


def test_callbacks_once_per_sink_or_per_step(small):
    d = small.repeat(10)                            # 30 steps an epoch
    model, _ = lenet()
    steps = Steps()
    model.train(2, d, callbacks=steps, dataset_sink_mode=False)
    assert len(steps.steps) == 60
    assert [s[:3] for s in steps.steps[28:32]] == [(1, 29, 29), (1, 30, 30), (2, 1, 31),
                                                   (2, 2, 32)]
    assert steps.calls == ["begin", "epoch_begin", "epoch_end", "epoch_begin", "epoch_end", "end"]
    steps = Steps()
    model.train(3, d, callbacks=[steps], dataset_sink_mode=True, sink_size=7)
    assert [s[:3] for s in steps.steps] == [(1, 7, 7), (2, 7, 14), (3, 7, 21)]

    class Plain:                                    # MindSpore 2's names, no base class
        def __init__(self):
            self.n = 0

        def on_train_step_end(self, run_context):
            self.n += 1
            if self.n == 4:
                run_context.request_stop()
    plain = Plain()
    model.train(2, d, callbacks=[plain], dataset_sink_mode=False)
    assert plain.n == 4                             # stopped after the step that asked
    with pytest.raises(TypeError, match="hooks"):
        model.train(1, d, callbacks=[object()])


def test_monitor_lines_go_to_sys_stdout(small, capsys):
    model, _ = lenet()
    model.train(2, small.repeat(10), callbacks=[train.LossMonitor(), train.TimeMonitor()],
                dataset_sink_mode=True, sink_size=10)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("epoch: 1 step: 10, loss is ")
    assert lines[2].startswith("epoch: 2 step: 10, loss is ")
    assert lines[1].startswith("epoch time: ") and " ms, per step time: " in lines[1]
    model.train(1, small, callbacks=[train.LossMonitor(2)], dataset_sink_mode=False)
    assert capsys.readouterr().out.splitlines()[0].startswith("epoch: 1 step: 2, loss is ")


def test_checkpoints(small, tmp_path):
    model, network = lenet()
    config = train.CheckpointConfig(save_checkpoint_steps=10, keep_checkpoint_max=2)
    saver = train.ModelCheckpoint(prefix="lenet", directory=tmp_path / "ckpt", config=config)
    model.train(1, small.repeat(10), callbacks=[saver])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["lenet-1_20.ckpt", "lenet-1_30.ckpt"]
    saved = sluice.load_checkpoint(tmp_path / "ckpt" / "lenet-1_30.ckpt")
    assert_same(values(network), {k: v.asnumpy() for k, v in saved.items()
                                  if not k.startswith("moments.")})
    # into a network before and after it has a Model
    path = tmp_path / "direct.ckpt"
    sluice.save_checkpoint(network, path)
    sluice.set_seed(3)
    other = nn.LeNet5()
    assert not np.array_equal(other.trainable_params()[0].asnumpy(),
                              values(network)["conv1.weight"])
    assert sluice.load_param_into_net(other, sluice.load_checkpoint(path)) == []
    assert_same(values(other), values(network))
    train.Model(other, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    assert_same(values(other), values(network))     # the new Model took the values over
    data = bytearray(path.read_bytes())
    data[40] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(OSError, match="CRC"):
        sluice.load_checkpoint(path)


@pytest.mark.long  # results, checked by the plain build; its threads run sanitized in the short tests
def test_eval_returns_accuracy():
    root = fashion_or_fail()
    model, _ = lenet(metrics={"accuracy"})
    model.train(1, create_dataset(root).take(50), dataset_sink_mode=True)
    test = create_dataset(root, usage="test", shuffle=False).take(20)  # 640 samples
    result = model.eval(test)
    assert list(result) == ["accuracy"]
    assert isinstance(result["accuracy"], float) and 0.0 <= result["accuracy"] <= 1.0
    both = train.Model(model.network, metrics={"Accuracy": train.Accuracy()})
    assert both.eval(test) == {"Accuracy": result["accuracy"]}  # the values moved with it
    # MindSpore's arguments: sinking or not, the same pass; the metric from
    # mindspore.nn's paths
    same = sluice.Model(model.network, metrics={"acc": nn.metrics.Accuracy()})
    assert same.eval(test, dataset_sink_mode=True) == {"acc": result["accuracy"]}
    assert same.eval(test, callbacks=None, dataset_sink_mode=False) == {"acc": result["accuracy"]}
    assert nn.Accuracy is nn.metrics.Accuracy is train.Accuracy


# --- errors, exceptions, threads, the GIL --------------------------------------------------

def test_bad_arguments_raise_value_error(small, mnist):
    model, network = lenet(metrics={"accuracy"})
    with pytest.raises(ValueError, match="sink_size"):
        model.train(1, small, dataset_sink_mode=True, sink_size=0)
    with pytest.raises(ValueError, match="epoch"):
        model.train(0, small)
    with pytest.raises(ValueError, match=r"the dataset's columns are \['image', 'target'\]"):
        model.train(1, small.map(transforms.TypeCast(sluice.int32), input_columns="label",
                                 output_columns="target"))
    with pytest.raises(ValueError, match=r"float32 \[32, 1, 32, 32\]"):
        model.train(1, ds.MnistDataset(mnist, usage="train").batch(32, drop_remainder=True))
    with pytest.raises(ValueError, match="int32"):
        model.eval(ds.MnistDataset(mnist, usage="test").map(
            [vision.Resize((32, 32)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()],
            input_columns="image").batch(32))
    with pytest.raises(ValueError, match="no end"):            # found by the C library
        model.train(1, small.repeat(), dataset_sink_mode=True)
    with pytest.raises(ValueError, match="sink_size"):
        sluice.data_sink(one_step_cell()[0], small, sink_size=0)
    with pytest.raises(ValueError, match="sink_size"):
        train.DatasetHelper(small, sink_size=0)
    with pytest.raises(ValueError, match="metrics"):
        lenet()[0].eval(small)
    with pytest.raises(ValueError, match="runs no callbacks"):
        model.eval(small, callbacks=[train.LossMonitor()])
    with pytest.raises(TypeError, match="dataset_sink_mode"):
        model.eval(small, dataset_sink_mode="yes")
    with pytest.raises(ValueError, match="eval_type"):
        nn.metrics.Accuracy("multilabel")
    with pytest.raises(ValueError, match="data_size"):
        train.TimeMonitor(data_size=0)
    assert train.TimeMonitor(data_size=1875).data_size == 1875
    with pytest.raises(ValueError, match="sparse=True"):
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="none")
    with pytest.raises(ValueError, match="learning_rate"):
        nn.Momentum(network.trainable_params(), 0.0, 0.9)
    with pytest.raises(ValueError, match="momentum"):
        nn.Momentum(network.trainable_params(), 0.01, 1.5)
    with pytest.raises(ValueError, match="every parameter"):
        nn.Momentum(network.trainable_params()[:2], 0.01, 0.9)
    with pytest.raises(ValueError, match="GPU"):
        sluice.set_context(device_target="GPU")
    with pytest.raises(ValueError, match="mode"):
        sluice.set_context(mode=3)
    with pytest.raises(ValueError, match="jit_level"):
        sluice.set_context(jit_level="O2")
    with pytest.raises(ValueError, match="shape"):
        network.trainable_params()[0].set_data(np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="TrainOneStepCell"):
        sluice.data_sink(lambda x: x, small)
    assert sluice.get_context("device_target") == "CPU"


def test_failure_while_training_is_a_runtime_error(tmp_path):
    """A pipeline error mid-training (a Python map operation that raises)
    is a RuntimeError carrying the C message; the model trains afterwards."""
    d = create_dataset(make_mnist(tmp_path / "m", 100))
    calls = [0]

    def poison(label):
        calls[0] += 1
        if calls[0] > 5:
            raise ArithmeticError("bad label")
        return label
    bad = d.repeat(10).map(poison, input_columns="label")
    model, _ = lenet()
    for sink in (False, True):
        calls[0] = 0
        with pytest.raises(RuntimeError, match="ArithmeticError: bad label"):
            model.train(1, bad, dataset_sink_mode=sink)
    model.train(1, d)


@pytest.mark.parametrize("sink", [False, True])
def test_exception_in_a_callback_propagates_and_joins_threads(small, sink):
    model, _ = lenet()
    base = baseline()                               # the model's executor threads included

    class Boom(Exception):
        pass

    class Raise(train.Callback):
        def __init__(self):
            self.n = 0

        def step_end(self, run_context):
            self.n += 1
            if self.n == 3:
                raise Boom("from step_end")
    cb = Raise()
    with pytest.raises(Boom, match="from step_end"):
        model.train(5, small.repeat(100), callbacks=[cb], dataset_sink_mode=sink, sink_size=4)
    assert cb.n == 3                                # it stopped at once
    assert settled(base) == base
    model.train(1, small, dataset_sink_mode=sink)  # the model still trains
    assert settled(base) == base


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
@pytest.mark.parametrize("sink", [False, True])
def test_ctrl_c_stops_training(small, sink):
    model, _ = lenet()
    base = baseline()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):  # no end: only the signal stops it
            if sink:
                model.train(1, small, dataset_sink_mode=True, sink_size=10**9)  # one sink
            else:
                model.train(1, small.repeat(), dataset_sink_mode=False)
        waited = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGINT, old)
        timer.join()
    assert 0.25 < waited < 2.0, waited
    assert settled(base) == base
    model.train(1, small, dataset_sink_mode=sink)


def test_gil_is_free_while_training(small):
    """Another Python thread keeps running while train() runs in C. It notes
    the time every millisecond; a callback at each sink's end counts the
    notes taken while that sink ran (between the epoch's begin and end
    callbacks, when only C runs) and stops training once there are 50. A
    train that held the GIL would leave no note inside any sink and run to
    its 2000 sinks. How many sinks that takes depends on the machine's
    speed; the outcome does not."""
    model, _ = lenet()
    notes = []
    stop = threading.Event()

    def note():
        while not stop.is_set():
            notes.append(time.monotonic())
            time.sleep(0.001)

    class Count(train.Callback):
        inside = 0
        sinks = 0

        def epoch_begin(self, run_context):
            self.begin = time.monotonic()

        def epoch_end(self, run_context):
            end = time.monotonic()
            self.sinks += 1
            self.inside += sum(1 for x in reversed(notes[-1000:]) if self.begin < x < end)
            if self.inside >= 50:
                run_context.request_stop()

    count = Count()
    t = threading.Thread(target=note)
    t.start()
    try:
        model.train(2000, small, callbacks=[count], dataset_sink_mode=True, sink_size=20)
    finally:
        stop.set()
        t.join()
    assert count.inside >= 50, f"{count.inside} notes inside {count.sinks} sinks"
    assert count.sinks < 2000


def test_callbacks_may_read_parameters(small):
    """A callback runs while its training holds the model: reading the
    parameters there works (and sees the step's values); training the same
    model from it is refused."""
    model, network = lenet()
    seen = []

    class Read(train.Callback):
        def step_end(self, run_context):
            seen.append(network.trainable_params()[-1].asnumpy())
            if len(seen) == 2:
                model.train(1, small)
    with pytest.raises(RuntimeError, match="train: not from a callback"):
        model.train(1, small, callbacks=[Read()])
    assert len(seen) == 2 and not np.array_equal(seen[0], seen[1])


# --- the example and the README ----------------------------------------------------------

@pytest.mark.parametrize("loop,line", [("model", "epoch: {e} step: 20, loss is "),
                                       ("data_sink", "epoch {e}, loss is "),
                                       ("custom", "epoch: {e}/2, losses: ")])
def test_lenet_sluice_example_runs(loop, line):
    """bindings/python/examples/lenet_sluice.py, each of the seeds' loops for
    2 epochs of 20 steps: one loss line per epoch (per sink), then the
    accuracy."""
    root = fashion_or_fail()
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "lenet_sluice.py")
    out = subprocess.run([sys.executable, example, "--data", root, "--epochs", "2",
                          "--sink-size", "20", "--eval-batches", "5", "--loop", loop],
                         check=True, capture_output=True, text=True,
                         env=python_env()).stdout
    lines = out.splitlines()
    assert lines[0] == "============== Starting Training =============="
    for e in (1, 2):
        assert sum(x.startswith(line.format(e=e)) for x in lines) == 1
    assert sum(x.startswith("epoch time: ") for x in lines) == (2 if loop == "model" else 0)
    assert lines[-2] == "============== Starting Testing =============="
    assert lines[-1].startswith("{'accuracy': ")


SEED004_IMPORTS = [("from sluice import context, Model\n",
                    "from sluice import context\nfrom sluice.train import Model\n"),
                   ("from sluice import dtype as mstype\n",
                    "from sluice.common import dtype as mstype\n"),
                   ("from sluice.nn import Accuracy\n",
                    "from sluice.nn.metrics import Accuracy\n")]


@pytest.mark.parametrize("imports", ["seed000", "seed004"])
def test_seed_model_train_example_runs_on_a_folder_of_train_files(imports, tmp_path):
    """bindings/python/examples/seed000_model_train.py as the seeds run it:
    on a folder holding only the uncompressed train files (what seed 001
    downloads), MnistDataset's default usage, 2 epochs of sink_size 3; and
    with seed 004's import paths in place of seed 000's."""
    root = tmp_path / "MNIST_Data" / "train"
    make_mnist(root, 200)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        os.remove(root / name)
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "seed000_model_train.py")
    with open(example) as f:
        text = f.read()
    edits = [('ds_train_path = "/usr/share/datasets/fashion-mnist"', f'ds_train_path = "{root}"'),
             ("model.train(epoch=10, train_dataset=ds_train, callbacks=[LossMonitor()], "
              "dataset_sink_mode=True, sink_size=1000)",
              "model.train(epoch=2, train_dataset=ds_train, callbacks=[LossMonitor()], "
              "dataset_sink_mode=True, sink_size=3)")]
    if imports == "seed004":
        edits += SEED004_IMPORTS
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    script = tmp_path / "seed.py"
    script.write_text(text)
    out = subprocess.run([sys.executable, str(script)], check=True, capture_output=True,
                         text=True, timeout=120,
                         env=python_env()).stdout
    lines = out.splitlines()
    assert lines[0] == "============== Starting Training =============="
    assert len(lines) == 3
    for e, line in enumerate(lines[1:], 1):
        head, loss = line.split(", loss is ")
        assert head == f"epoch: {e} step: 3"
        assert 0 < float(loss) < 10


@pytest.mark.long
def test_readme_training_example(capsys):
    """The Python block of docs/python-training.md (the training section that
    was README.md's) runs as written."""
    fashion_or_fail()
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs",
                       "python-training.md")
    text = open(doc).read()
    section = text[text.index("# Python: training"):]
    code = section[section.index("```python\n") + 10:section.index("\n```\n")]
    exec(compile(code, "docs/python-training.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "============== Starting Training =============="
    assert out[1].startswith("epoch: 1 step: 100, loss is ")
    assert out[-1].startswith("{'accuracy': ")
