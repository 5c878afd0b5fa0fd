"""A network's parameters are one truth (seed 004, issue 31): every Model
over a network computes on its current values, whichever Model trained
them last and wherever the other was made, a callback of the first's
training included; the optimizer's accumulators move with the optimizer,
and an optimizer that keeps none (SGD) moves nothing."""
import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train
from sluice.common.initializer import TruncatedNormal
from conftest import assert_same, loss_cell, values


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


def create_dataset(data_path, usage="train", drop_remainder=True, shuffle=True):
    d = ds.MnistDataset(data_path, usage=usage, shuffle=shuffle)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
                          vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image")
    if shuffle:
        d = d.shuffle(buffer_size=10000)
    return d.batch(32, drop_remainder=drop_remainder)


@pytest.fixture
def small(mnist):
    """conftest's 100-sample MNIST: 3 batches an epoch."""
    return create_dataset(mnist)


class SmallNet(nn.Cell):
    """A network of the user's own: conv, ReLU, pool, dense."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid", has_bias=False,
                               weight_init=TruncatedNormal(0.02))
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(6 * 14 * 14, 10, TruncatedNormal(0.02), TruncatedNormal(0.02))

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.relu(self.conv1(x)))))


NETWORKS = {"lenet": lambda: nn.LeNet5(10), "users_cell": SmallNet}
OPTIMIZERS = {"momentum": lambda net: nn.Momentum(net.trainable_params(), 0.01, 0.9),
              "sgd": lambda net: nn.SGD(net.trainable_params(), 0.05)}


def saved_values(model, path):
    """The network's values as model's checkpoint holds them."""
    sluice.save_checkpoint(model, path)
    return {k: v.asnumpy() for k, v in sluice.load_checkpoint(path).items()
            if not k.startswith("moments.")}


def assert_agree(models, network, data, tmp_path):
    """Every model evaluates and saves the network's current values."""
    now = values(network)
    results = [m.eval(data) for m in models]
    assert all(r == results[0] for r in results), results
    for i, m in enumerate(models):
        assert_same(saved_values(m, tmp_path / f"m{i}.ckpt"), now)


class Reference(train.Callback):
    """Records the network's values at each epoch's end."""

    def __init__(self, network):
        self.network = network
        self.seen = []

    def epoch_end(self, run_context):
        self.seen.append(values(self.network))


@pytest.mark.parametrize("kind", sorted(NETWORKS))
@pytest.mark.parametrize("sink", [True, False])
def test_a_model_made_in_epoch_end_evaluates_the_current_weights(small, tmp_path, kind, sink):
    """The issue's case: a second Model over the network, made in
    epoch_end and evaluated there, sees each epoch's weights, and the first
    trains on, its epochs not lost, exactly as without the second."""
    net = NETWORKS[kind]()
    ref = Reference(net)
    train.Model(net, loss_cell(), OPTIMIZERS["momentum"](net)).train(
        3, small, callbacks=[ref], dataset_sink_mode=sink)

    sluice.set_seed(0)
    net = NETWORKS[kind]()
    opt = OPTIMIZERS["momentum"](net)
    model = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
    seen, accuracies, seconds = [], [], []

    class EvalInEpochEnd(train.Callback):
        def epoch_end(self, run_context):
            other = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
            accuracies.append(other.eval(small)["accuracy"])
            seen.append(values(net))
            seconds.append(other)
    model.train(3, small, callbacks=[EvalInEpochEnd()], dataset_sink_mode=sink)

    assert len(seen) == 3
    for epoch in range(3):
        assert_same(seen[epoch], ref.seen[epoch])
    assert_same(values(net), ref.seen[-1])
    assert not np.array_equal(seen[0][next(iter(seen[0]))], seen[2][next(iter(seen[2]))])
    # each epoch's accuracy is that of its weights, evaluated anew
    for epoch in range(3):
        sluice.load_param_into_net(net, ref.seen[epoch])
        assert model.eval(small)["accuracy"] == accuracies[epoch]
    sluice.load_param_into_net(net, ref.seen[-1])
    assert_agree([model] + seconds, net, small, tmp_path)


@pytest.mark.parametrize("kind", sorted(NETWORKS))
@pytest.mark.parametrize("opt_kind", sorted(OPTIMIZERS))
def test_two_models_over_one_network_never_disagree(small, tmp_path, kind, opt_kind):
    """Any interleaving of two Models' calls over one network (and one
    optimizer) trains as one Model would, and after each call both
    evaluate and save the same, current, values."""
    net = NETWORKS[kind]()
    ref = train.Model(net, loss_cell(), OPTIMIZERS[opt_kind](net))
    for _ in range(3):
        ref.train(1, small, dataset_sink_mode=True)
    expected = values(net)

    sluice.set_seed(0)
    net = NETWORKS[kind]()
    opt = OPTIMIZERS[opt_kind](net)
    first = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
    second = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
    first.train(1, small, dataset_sink_mode=True)
    assert_agree([first, second], net, small, tmp_path)
    second.train(1, small, dataset_sink_mode=False)
    assert_agree([first, second], net, small, tmp_path)
    first.train(1, small, dataset_sink_mode=True)
    assert_agree([first, second], net, small, tmp_path)
    assert_same(values(net), expected)


def test_a_second_model_trained_in_a_callback_is_not_undone(mnist):
    """What a callback's own Model trains stays: the training model takes
    the values back after the hook and trains on from them."""
    small = create_dataset(mnist, shuffle=False)   # every epoch in one order
    net = nn.LeNet5(10)
    opt = OPTIMIZERS["sgd"](net)
    model = train.Model(net, loss_cell(), opt)
    after_hook = []

    class TrainAnother(train.Callback):
        def epoch_end(self, run_context):
            train.Model(net, loss_cell(), opt).train(1, small)
            after_hook.append(values(net))
    model.train(2, small, callbacks=[TrainAnother()], dataset_sink_mode=True)

    sluice.set_seed(0)
    ref_net = nn.LeNet5(10)
    ref = train.Model(ref_net, loss_cell(), OPTIMIZERS["sgd"](ref_net))
    for _ in range(2):                  # model's epoch, then the callback's
        ref.train(1, small, dataset_sink_mode=True)
        ref.train(1, small)
    assert_same(values(net), values(ref_net))
    assert_same(after_hook[-1], values(ref_net))


@pytest.mark.parametrize("kind", sorted(NETWORKS))
def test_sgd_reused_by_a_second_model_and_train_one_step_cell(small, kind):
    """One nn.SGD in a Model, then in a second Model and a TrainOneStepCell
    over the same network: SGD keeps no accumulators, so only the
    parameters move, and the three train on as one model would."""
    net = NETWORKS[kind]()
    ref = train.Model(net, loss_cell(), OPTIMIZERS["sgd"](net))
    for _ in range(3):
        ref.train(1, small, dataset_sink_mode=True)
    expected = values(net)

    sluice.set_seed(0)
    net = NETWORKS[kind]()
    sgd = OPTIMIZERS["sgd"](net)
    train.Model(net, loss_cell(), sgd).train(1, small, dataset_sink_mode=True)
    train.Model(net, loss_cell(), sgd).train(1, small, dataset_sink_mode=True)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_cell()), sgd)
    helper = train.DatasetHelper(small, dataset_sink_mode=True, sink_size=-1, epoch_num=1)
    connected = train.connect_network_with_dataset(step, helper)
    for inputs in helper:
        connected(*inputs)
    helper.close()
    assert_same(values(net), expected)


@pytest.mark.parametrize("sink", [True, False])
def test_training_on_two_devices_keeps_one_truth(small, sink):
    """With a replica of the parameters per device, a callback may still
    evaluate with a second Model over the network (nothing changes), and a
    change to the parameters reaches every replica: training goes on from
    it on both devices alike (the replicas are compared when it ends)."""
    devices = ["cpu:0", "cpu:1"]
    net = nn.LeNet5(10)
    opt = OPTIMIZERS["momentum"](net)
    model = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
    seen = []

    class EvalAnother(train.Callback):
        def epoch_end(self, run_context):
            other = train.Model(net, loss_cell(), opt, metrics={"accuracy"})
            seen.append((other.eval(small)["accuracy"], values(net)))
    model.train(2, small, callbacks=[EvalAnother()], dataset_sink_mode=sink, devices=devices)

    sluice.set_seed(0)
    ref_net = nn.LeNet5(10)
    ref = Reference(ref_net)
    train.Model(ref_net, loss_cell(), OPTIMIZERS["momentum"](ref_net)).train(
        2, small, callbacks=[ref], dataset_sink_mode=sink, devices=devices)
    assert_same(values(net), values(ref_net))
    for (_, weights), expected in zip(seen, ref.seen):
        assert_same(weights, expected)

    class Change(train.Callback):
        def __init__(self):
            self.after = None

        def epoch_end(self, run_context):
            p = net.trainable_params()[0]
            p.set_data(np.zeros(p.shape, np.float32))
            self.after = values(net)
    change = Change()
    model.train(1, small, callbacks=[change], dataset_sink_mode=sink, devices=devices)
    assert not np.any(change.after["conv1.weight"])
    # a second epoch steps on from the zeros on both devices (train ends
    # with "the devices' replicas differ" if one kept the old weights)
    model.train(1, small, dataset_sink_mode=sink, devices=devices)
