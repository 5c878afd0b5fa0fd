"""Evaluating while training (seed 004's third scenario, MindSpore's
tutorial "evaluate the model during training"): a callback's
``self.model.eval(...)`` at an epoch's or a sink's end runs between sinks
on the current weights, and training goes on as if it had not."""
import os
import signal
import threading

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.nn as nn
from sluice import train
from sluice.train import Callback, LossMonitor, Model
from sluice.nn import Accuracy
from conftest import assert_same, baseline, loss_cell, make_mnist, settled, values
from test_shared_params import NETWORKS, create_dataset


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


class EvalCallBack(Callback):
    """The tutorial's callback, as written there."""

    def __init__(self, model, eval_dataset, eval_per_epoch, epoch_per_eval):
        self.model = model
        self.eval_dataset = eval_dataset
        self.eval_per_epoch = eval_per_epoch
        self.epoch_per_eval = epoch_per_eval

    def epoch_end(self, run_context):
        cb_param = run_context.original_args()
        cur_epoch = cb_param.cur_epoch_num
        if cur_epoch % self.eval_per_epoch == 0:
            acc = self.model.eval(self.eval_dataset, dataset_sink_mode=False)
            self.epoch_per_eval["epoch"].append(cur_epoch)
            self.epoch_per_eval["acc"].append(acc["Accuracy"])
            print(acc)


class Weights(Callback):
    """Records the network's values where the evaluation ran."""

    def __init__(self, network, hook):
        self.network = network
        self.seen = []
        setattr(self, hook, self.record)

    def record(self, run_context):
        self.seen.append(values(self.network))


def reference(kind, train_data, epochs, sink, sink_size=-1):
    """The same training without evaluating: its final values."""
    sluice.set_seed(0)
    net = NETWORKS[kind]()
    model = Model(net, loss_cell(), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    model.train(epochs, train_data, dataset_sink_mode=sink, sink_size=sink_size)
    return values(net)


def accuracy_of(kind, weights, eval_data):
    """The accuracy of a fresh model loaded with weights."""
    net = NETWORKS[kind]()
    sluice.load_param_into_net(net, weights)
    return Model(net, loss_cell(), metrics={"Accuracy": Accuracy()}).eval(eval_data)["Accuracy"]


@pytest.mark.parametrize("kind", sorted(NETWORKS))
@pytest.mark.parametrize("sink", [True, False])
def test_the_tutorials_eval_callback(tmp_path, capsys, kind, sink):
    root = make_mnist(tmp_path / "mnist", 100, 40)
    train_data = create_dataset(root)
    eval_data = create_dataset(root, usage="test", drop_remainder=False)   # 32, then 8
    sluice.set_seed(0)
    network = NETWORKS[kind]()
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    model = Model(network, loss_cell(), net_opt, metrics={"Accuracy": Accuracy()})
    epoch_per_eval = {"epoch": [], "acc": []}
    eval_cb = EvalCallBack(model, eval_data, 1, epoch_per_eval)
    weights = Weights(network, "epoch_end")
    ckpoint_cb = train.ModelCheckpoint(prefix="checkpoint_lenet", directory=str(tmp_path),
                                       config=train.CheckpointConfig(save_checkpoint_steps=3))
    model.train(3, train_data, callbacks=[ckpoint_cb, LossMonitor(3), weights, eval_cb],
                dataset_sink_mode=sink)

    assert epoch_per_eval["epoch"] == [1, 2, 3]
    assert capsys.readouterr().out.count("{'Accuracy': ") == 3
    assert_same(values(network), reference(kind, train_data, 3, sink))
    for epoch in range(3):
        assert epoch_per_eval["acc"][epoch] == accuracy_of(kind, weights.seen[epoch], eval_data)
    assert not all(np.array_equal(weights.seen[0][n], weights.seen[2][n])
                   for n in weights.seen[0])


@pytest.mark.parametrize("sink", [True, False])
def test_eval_at_each_sink_end(mnist, sink):
    """From step_end: once per sink (sinking, sink_size 2 of an endless
    traversal), after every step without."""
    train_data = create_dataset(mnist)              # 3 batches
    epochs, sink_size = (2, 2) if sink else (1, -1)
    if sink:
        train_data = train_data.repeat()
    eval_data = create_dataset(mnist, usage="test", drop_remainder=False)
    network = nn.LeNet5(10)
    model = Model(network, loss_cell(), nn.Momentum(network.trainable_params(), 0.01, 0.9),
                  metrics={"accuracy"})
    weights = Weights(network, "step_end")
    seen = []

    class EvalAtStepEnd(Callback):
        def step_end(self, run_context):
            seen.append(model.eval(eval_data)["accuracy"])
    model.train(epochs, train_data, callbacks=[weights, EvalAtStepEnd()],
                dataset_sink_mode=sink, sink_size=sink_size)
    assert len(seen) == (2 if sink else 3)
    assert_same(values(network), reference("lenet", train_data, epochs, sink, sink_size))
    for i, acc in enumerate(seen):
        assert acc == accuracy_of("lenet", weights.seen[i], eval_data)


def test_train_from_a_callback_is_still_refused(mnist):
    """Training the model that is training is not evaluating: refused,
    saying what may be called there."""
    network = nn.LeNet5(10)
    model = Model(network, loss_cell(), nn.Momentum(network.trainable_params(), 0.01, 0.9))
    data = create_dataset(mnist)

    class TrainAgain(Callback):
        def epoch_end(self, run_context):
            model.train(1, data)
    with pytest.raises(RuntimeError, match="train: not from a callback.*model.eval may be"):
        model.train(1, data, callbacks=[TrainAgain()])


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
@pytest.mark.parametrize("sink", [False, True])
def test_ctrl_c_during_an_eval_in_a_callback(mnist, sink):
    """Ctrl-C while a callback evaluates stops both the evaluation and the
    training (which has no end: only the signal stops it), raises
    KeyboardInterrupt and joins every thread they started; the model
    trains and evaluates afterwards."""
    sent = []

    def interrupt_once(label):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return label
    eval_data = create_dataset(mnist, usage="test", drop_remainder=False).map(
        operations=interrupt_once, input_columns="label")
    network = nn.LeNet5(10)
    model = Model(network, loss_cell(), nn.Momentum(network.trainable_params(), 0.01, 0.9),
                  metrics={"accuracy"})

    class EvalAtStepEnd(Callback):
        def step_end(self, run_context):
            model.eval(eval_data)
    base = baseline()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            model.train(1, create_dataset(mnist).repeat(), callbacks=[EvalAtStepEnd()],
                        dataset_sink_mode=sink, sink_size=1 if sink else -1)
    finally:
        signal.signal(signal.SIGINT, old)
    assert sent
    assert settled(base) == base
    model.train(1, create_dataset(mnist), dataset_sink_mode=sink)
    assert 0.0 <= model.eval(eval_data)["accuracy"] <= 1.0


@pytest.mark.long
def test_the_tutorials_script_runs(tmp_path):
    """bindings/python/examples/eval_while_training.py, the tutorial's
    script: an accuracy line per epoch, each that epoch's checkpoint's
    accuracy evaluated anew by an evaluation-only Model."""
    import importlib.util
    import subprocess
    import sys
    from conftest import fashion_or_fail, python_env
    root = fashion_or_fail()
    example = os.path.join(os.path.dirname(__file__), "..", "examples",
                           "eval_while_training.py")
    ckpt_dir = tmp_path / "ckpt"
    out = subprocess.run([sys.executable, example, "--data", root, "--epochs", "3",
                          "--eval-per-epoch", "1", "--train-samples", "9600",
                          "--eval-samples", "650", "--ckpt-dir", str(ckpt_dir)],
                         check=True, capture_output=True, text=True, timeout=120,
                         env=python_env()).stdout
    lines = out.splitlines()
    printed = [float(x[len("{'Accuracy': "):-1]) for x in lines if x.startswith("{'Accuracy': ")]
    assert len(printed) == 3 and printed[0] != printed[2]
    assert lines[-2] == f"epoch_per_eval: {{'epoch': [1, 2, 3], 'acc': {printed}}}"
    spec = importlib.util.spec_from_file_location("eval_while_training", example)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    eval_data = script.create_dataset(root, "test", num_samples=650, drop_remainder=False)
    for epoch, acc in enumerate(printed, 1):
        net = nn.LeNet5(10)
        sluice.load_param_into_net(net, sluice.load_checkpoint(
            str(ckpt_dir / f"checkpoint_lenet-{epoch}_300.ckpt")))
        model = Model(net, metrics={"Accuracy": Accuracy()})
        assert model.eval(eval_data)["Accuracy"] == acc
