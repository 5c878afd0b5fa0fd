"""Networks of the user's own (an nn.Cell with a construct, seed 001's
LeNet5) traced into the C graph, and the functional loop of seed 001:
value_and_grad, an optimizer called on the grads, data_sink(train_step).
The traced LeNet5 is the built-in one node for node and trains to the same
parameters, bit for bit; data_sink calls continue each other; what sluice
cannot trace or run raises an error naming it."""
import os
import subprocess
import sys

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
import sluice.ops as ops
from sluice import train
from sluice.common.initializer import Normal, TruncatedNormal
from conftest import assert_same, fashion_or_fail, loss_cell, python_env, values


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


def create_dataset(data_path, batch_size=32, drop_remainder=True):
    d = ds.MnistDataset(data_path, usage="train")
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map(operations=[vision.Resize((32, 32), interpolation=vision.Inter.LINEAR),
                          vision.Rescale(1.0 / 255.0, 0.0),
                          vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image")
    return d.shuffle(buffer_size=10000).batch(batch_size, drop_remainder=drop_remainder)


@pytest.fixture
def small(mnist):
    """The seeds' pipeline over conftest's 100-sample MNIST, without end."""
    return create_dataset(mnist).repeat()


# --- seed 001's network, as written there --------------------------------------------

def conv(in_channels, out_channels, kernel_size, stride=1, padding=0):
    return nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                     padding=padding, weight_init=TruncatedNormal(0.02), has_bias=False,
                     pad_mode="valid")


def fc_with_initialize(input_channels, out_channels):
    return nn.Dense(input_channels, out_channels, TruncatedNormal(0.02), TruncatedNormal(0.02))


class LeNet5(nn.Cell):
    def __init__(self, num_class=10):
        super(LeNet5, self).__init__()
        self.num_class = num_class
        self.batch_size = 32
        self.conv1 = conv(1, 6, 5)
        self.conv2 = conv(6, 16, 5)
        self.fc1 = fc_with_initialize(16 * 5 * 5, 120)
        self.fc2 = fc_with_initialize(120, 84)
        self.fc3 = fc_with_initialize(84, self.num_class)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = ops.reshape(x, (self.batch_size, -1))
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)
        x = self.relu(x)
        x = self.fc3(x)
        return x


def functional(network, optimizer=None):
    """Seed 001's forward_fn, grad_fn and train_step over network."""
    net_loss = loss_cell()
    net_opt = optimizer or nn.Momentum(network.trainable_params(), 0.01, 0.9)

    def forward_fn(data, label):
        return net_loss(network(data), label)

    grad_fn = sluice.value_and_grad(forward_fn, None, network.trainable_params())

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        net_opt(grads)
        return loss
    return train_step


def builtin_model():
    network = nn.LeNet5(10)
    opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    return train.Model(network, loss_cell(), opt), network


# --- the traced network is the built-in one -------------------------------------------

def test_traced_lenet_is_the_builtin_graph(small):
    mine, builtin = LeNet5(), nn.LeNet5()
    shapes = [(p.name, p.shape) for p in mine.trainable_params()]
    assert shapes == [(p.name, p.shape) for p in builtin.trainable_params()]
    assert shapes[0] == ("conv1.weight", (6, 1, 5, 5)) and shapes[3] == ("fc1.bias", (120,))
    assert_same(values(mine), values(builtin))        # same seed, same initial values
    traced = train.Model(mine, loss_cell(), nn.Momentum(mine.trainable_params(), 0.01, 0.9))
    traced._ensure(small, "test")
    model, _ = builtin_model()
    a, b = traced._c.nodes(), model._c.nodes()
    assert [op for op, _ in a] == [op for op, _ in b]
    assert [n for op, n in a if op == "param"] == [n for op, n in b if op == "param"]


@pytest.mark.long
def test_data_sink_train_step_equals_model_train_bit_for_bit(small):
    mine = LeNet5()
    sink = sluice.data_sink(functional(mine), small, sink_size=200, jit_config=sluice.JitConfig())
    loss = sink()
    sink.close()
    model, builtin = builtin_model()
    model.train(1, small, dataset_sink_mode=True, sink_size=200)
    assert_same(values(mine), values(builtin))
    assert isinstance(loss, sluice.Tensor) and loss.shape == () and np.isfinite(loss.item())
    assert not np.array_equal(values(mine)["fc3.bias"], values(LeNet5())["fc3.bias"])


@pytest.mark.long
def test_two_sinks_of_50_equal_one_of_100_in_either_mode(small):
    a, b, c = LeNet5(), LeNet5(), LeNet5()
    sink = sluice.data_sink(functional(a), small, sink_size=50, jit_config=sluice.JitConfig())
    sink()
    loss_a = sink()
    sink.close()
    with sluice.data_sink(functional(b), small, sink_size=100) as sink:   # PYNATIVE
        loss_b = sink()
    with sluice.data_sink(functional(c), small, sink_size=1) as sink:     # pattern 1
        for _ in range(100):
            loss_c = sink()
    assert loss_a.item() == loss_b.item() == loss_c.item()
    assert_same(values(a), values(b))
    assert_same(values(a), values(c))


@pytest.mark.long  # results, checked by the plain build; its threads run sanitized in the short tests
def test_a_new_data_sink_continues_the_parameters_and_momentum(small):
    """The seed trains one network with three data_sinks in turn: each
    starts from the last one's parameters and Momentum accumulators, as a
    Model trained twice does."""
    mine = LeNet5()
    step = functional(mine)
    for _ in range(2):
        with sluice.data_sink(step, small, sink_size=30) as sink:
            sink()
    model, builtin = builtin_model()
    for _ in range(2):
        model.train(1, small, dataset_sink_mode=True, sink_size=30)
    assert_same(values(mine), values(builtin))


def test_model_and_dataset_helper_train_a_users_cell(small):
    """Seed 004's custom loop (DatasetHelper + TrainOneStepCell) and
    Model.train with the seed's own LeNet5 equal the built-in one's."""
    mine = LeNet5()
    net = nn.TrainOneStepCell(nn.WithLossCell(mine, loss_cell()),
                              nn.Momentum(mine.trainable_params(), 0.01, 0.9))
    helper = train.DatasetHelper(small, dataset_sink_mode=True, sink_size=10, epoch_num=3)
    net = train.connect_network_with_dataset(net, helper)
    losses = [net(*inputs) for _ in range(3) for inputs in helper]
    helper.close()
    assert len(losses) == 3
    model, builtin = builtin_model()
    model.train(3, small, dataset_sink_mode=True, sink_size=10)
    assert_same(values(mine), values(builtin))
    mine = LeNet5()
    traced = train.Model(mine, loss_cell(), nn.Momentum(mine.trainable_params(), 0.01, 0.9))
    traced.train(1, small.take(10), dataset_sink_mode=False)
    model, builtin = builtin_model()
    model.train(1, small.take(10), dataset_sink_mode=False)
    assert_same(values(mine), values(builtin))


def test_initializers_and_layer_options():
    sluice.set_seed(7)
    a = nn.Dense(4, 3, Normal(0.5), "zeros")
    b = nn.Dense(4, 3, Normal(0.5), "zeros")
    wa, wb = a.weight.asnumpy(), b.weight.asnumpy()
    assert np.array_equal(wa, wb) and 0.1 < wa.std() < 1.0
    assert not b.bias.asnumpy().any()
    d = nn.Dense(2, 2, np.eye(2, dtype=np.float32), np.ones(2, np.float32))
    assert np.array_equal(d.weight.asnumpy(), np.eye(2))
    with pytest.raises(ValueError, match="has_bias"):
        nn.Conv2d(1, 6, 5, has_bias=True)
    with pytest.raises(ValueError, match="'same'"):
        nn.Conv2d(1, 6, 4)
    with pytest.raises(ValueError, match="initializer"):
        nn.Dense(2, 2, "xavier_uniform")
    with pytest.raises(AttributeError, match="BatchNorm2d"):
        nn.BatchNorm2d(6)
    with pytest.raises(AttributeError, match="ReduceSum"):
        ops.ReduceSum(keep_dims=False)


# --- clear errors ------------------------------------------------------------------------

class Bad(nn.Cell):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.fc = nn.Dense(1024, 10, TruncatedNormal(0.02), "zeros")

    def construct(self, x):
        x = ops.reshape(x, (32, -1))
        if self.how == "method":
            x = x.view(32, -1)
        elif self.how == "mul":
            x = x * 2
        elif self.how == "numpy":
            x = np.tanh(x)
        return self.fc(x)


@pytest.mark.parametrize("how,match", [("method", "tensor op 'view'"), ("mul", r"used \*"),
                                       ("numpy", "numpy")])
def test_unsupported_op_in_construct_names_it(small, how, match):
    network = Bad(how)
    with pytest.raises((TypeError, AttributeError), match=match) as info:
        sluice.data_sink(functional(network), small)
    assert "supported: nn.Conv2d" in str(info.value)


def test_value_and_grad_of_a_non_scalar(small):
    network = LeNet5()
    grad_fn = sluice.value_and_grad(lambda data, label: network(data), None,
                                    network.trainable_params())
    opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        opt(grads)
        return loss
    with pytest.raises(ValueError, match=r"scalar loss.*\(32, 10\)"):
        sluice.data_sink(train_step, small)


def test_grads_given_to_another_networks_optimizer(small):
    network, other = LeNet5(), LeNet5()
    step = functional(network, optimizer=nn.Momentum(other.trainable_params(), 0.01, 0.9))
    with pytest.raises(ValueError, match="gradients are of .*conv1.weight.* this optimizer"):
        sluice.data_sink(step, small)


def test_functional_pieces_outside_a_traced_step(small):
    network = LeNet5()
    x = np.zeros((32, 1, 32, 32), np.float32)
    assert network(x).shape == (32, 10)   # a forward pass (test_eager_forward.py)
    grad_fn = sluice.value_and_grad(lambda d, l: loss_cell()(network(d), l), None,
                                    network.trainable_params())
    loss, _ = grad_fn(x, np.zeros(32, np.int32))   # runs once an optimizer takes its grads
    with pytest.raises(RuntimeError, match="known once the step has run"):
        loss.asnumpy()
    with pytest.raises(TypeError, match="value_and_grad returned"):
        nn.Momentum(network.trainable_params(), 0.01, 0.9)(None)
    with pytest.raises(TypeError, match="built-in"):
        sluice.value_and_grad(lambda d, l: d, None, nn.LeNet5().trainable_params())
    with pytest.raises(ValueError, match="grad_position"):
        sluice.value_and_grad(lambda d: d, 0, network.trainable_params())
    with pytest.raises(ValueError, match="no optimizer"):
        gf = sluice.value_and_grad(lambda d, l: loss_cell()(network(d), l), None,
                                   network.trainable_params())
        sluice.data_sink(lambda d, l: gf(d, l)[0], small)


def test_a_batch_shape_that_changes(mnist):
    d = create_dataset(mnist, drop_remainder=False)       # 32, 32, 32, then 4
    with pytest.raises(ValueError, match=r"'image' has shape \[-1, 1, 32, 32\].*drop_remainder"):
        sluice.data_sink(functional(LeNet5()), d)
    # batches of another size than construct assumes: the op that cannot take them
    d = create_dataset(mnist, batch_size=20).repeat()
    with pytest.raises(ValueError, match=r"Dense\(400, 120\).*\(32, 250\)"):
        sluice.data_sink(functional(LeNet5()), d)


# --- the seed's example ----------------------------------------------------------------

def test_seed001_data_sink_example_runs():
    root = fashion_or_fail()
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "seed001_data_sink.py")
    out = subprocess.run([sys.executable, example, "--data", root, "--epochs", "2",
                          "--steps", "3"], check=True, capture_output=True, text=True,
                         env=python_env()).stdout
    lines = out.splitlines()
    assert lines[0] == "============== Different calling methods train 2 epochs =============="
    assert lines[1] == "1. Default, execute one step data each per sink"
    assert [x.split(",")[0] for x in lines[2:8]] == [f"step {i}" for i in range(1, 7)]
    assert lines[8] == "2. Execute one epoch data per sink"
    assert [x.split(",")[0] for x in lines[9:11]] == ["epoch 1", "epoch 2"]
    assert lines[11] == "3. Execute multiple epoch data per sink"
    assert lines[12].startswith("loss is ") and len(lines) == 13
    for line in lines[2:8] + lines[9:11] + lines[12:]:
        assert 0 < float(line.rsplit(" ", 1)[1]) < 10


def test_checkpoints_of_a_users_cell(small, tmp_path):
    """save_checkpoint / load_checkpoint / load_param_into_net with the
    seed's own LeNet5: before any model (its initial values, step 0), and
    after training (the model's values, accumulators and global step); a
    fresh cell loaded from the file trains on exactly as the first."""
    mine = LeNet5()
    before = tmp_path / "before.ckpt"
    sluice.save_checkpoint(mine, before)
    saved = sluice.load_checkpoint(before)
    assert_same({k: v.asnumpy() for k, v in saved.items()}, values(mine))
    other = LeNet5()
    assert sluice.load_param_into_net(other, saved) == []
    assert_same(values(other), values(mine))

    opt = nn.Momentum(mine.trainable_params(), 0.01, 0.9)
    model = train.Model(mine, loss_cell(), opt)
    model.train(1, small.take(10), dataset_sink_mode=True)
    after = tmp_path / "after.ckpt"
    sluice.save_checkpoint(mine, after)
    saved = sluice.load_checkpoint(after)
    assert sorted(k for k in saved if k.startswith("moments.")) == \
        sorted("moments." + p.name for p in mine.trainable_params())
    assert_same({k: v.asnumpy() for k, v in saved.items() if not k.startswith("moments.")},
                values(mine))
    assert not np.array_equal(saved["conv1.weight"].asnumpy(),
                              sluice.load_checkpoint(before)["conv1.weight"].asnumpy())

    # a sub-cell's parameters alone, and a cell that is not a network
    part = tmp_path / "fc3.ckpt"
    sluice.save_checkpoint(mine.fc3, part)
    fc3 = sluice.load_checkpoint(part)
    assert sorted(fc3) == ["fc3.bias", "fc3.weight"]
    assert np.array_equal(fc3["fc3.weight"].asnumpy(), values(mine)["fc3.weight"])
    with pytest.raises(TypeError, match="network"):
        sluice.load_param_into_net(object(), saved)
    bad = {"conv1.weight": np.zeros((1, 2), np.float32)}
    with pytest.raises(ValueError, match="shape"):
        sluice.load_param_into_net(LeNet5(), bad)


def test_nodes_are_named_after_layers(small):
    """A traced network's nodes carry the layer paths of its code (as
    its parameters do), a layer used twice gets a suffix, ops outside any
    layer keep the op's own name; the dump of save_graphs shows them."""
    mine = LeNet5()
    traced = train.Model(mine, loss_cell(), nn.Momentum(mine.trainable_params(), 0.01, 0.9))
    traced._ensure(small, "test")
    names = [n for _, n in traced._c.nodes()]
    for want in ("conv1", "conv2", "fc1", "fc2", "fc3", "relu", "relu_2", "relu_3", "relu_4",
                 "max_pool2d", "max_pool2d_2", "grad.conv2", "grad.fc1"):
        assert want in names, (want, names)
    assert "relu_5" not in names
    assert any(n.startswith("reshape_") for n in names)   # ops.reshape in construct

    class Features(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv1 = conv(1, 6, 5)
            self.conv2 = conv(6, 16, 5)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

        def construct(self, x):
            x = self.pool(self.relu(self.conv1(x)))
            return self.pool(self.relu(self.conv2(x)))

    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.features = Features()
            self.head = fc_with_initialize(16 * 5 * 5, 10)

        def construct(self, x):
            return self.head(ops.reshape(self.features(x), (32, -1)))

    net = Outer()
    model = train.Model(net, loss_cell(), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    model._ensure(small, "test")
    names = [n for _, n in model._c.nodes()]
    for want in ("features.conv1", "features.relu", "features.relu_2", "features.pool_2",
                 "head", "head.weight", "grad.features.conv2"):
        assert want in names, (want, names)
