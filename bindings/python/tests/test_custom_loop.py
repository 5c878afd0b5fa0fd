"""Seed 004's custom training loop: a TrainOneStepCell written by the user
(ParameterTuple, ops.GradOperation with sens, ops.Fill, ops.depend) traced
into the same C graph as the built-in TrainOneStepCell, run by
DatasetHelper + connect_network_with_dataset (and data_sink), bit for bit
as the built-in sink path trains; MindSpore's module paths of the script;
the example itself; and what sluice refuses, by name."""
import os
import subprocess
import sys

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms.c_transforms as CT
import sluice.dataset.vision.c_transforms as CV
import sluice.nn as nn
import sluice.ops as ops
from sluice import context, train
from sluice.common import dtype as mstype
from sluice.common.initializer import TruncatedNormal
from sluice.common.parameter import ParameterTuple
from sluice.nn.wrap.cell_wrapper import WithLossCell
from sluice.train.dataset_helper import DatasetHelper, _model_of, connect_network_with_dataset
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


def create_dataset(data_path, batch_size=32):
    """The seed's create_dataset, with its module aliases (usage="train")."""
    d = ds.MnistDataset(data_path, usage="train")
    d = d.map(input_columns="label", operations=CT.TypeCast(mstype.int32))
    d = d.map(input_columns="image",
              operations=CV.Resize((32, 32), interpolation=CV.Inter.LINEAR))
    d = d.map(input_columns="image", operations=CV.Rescale(1.0 / 255.0, 0.0))
    d = d.map(input_columns="image", operations=CV.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081))
    d = d.map(input_columns="image", operations=CV.HWC2CHW())
    return d.shuffle(buffer_size=10000).batch(batch_size, drop_remainder=True)


@pytest.fixture
def small(mnist):
    """The seed's pipeline over conftest's 100-sample MNIST, without end."""
    return create_dataset(mnist).repeat()


# --- the seed's network and TrainOneStepCell, as written there ---------------------

def conv(in_channels, out_channels, kernel_size):
    return nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=1, padding=0,
                     weight_init=TruncatedNormal(0.02), has_bias=False, pad_mode="valid")


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
        self.reshape = ops.Reshape()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.reshape(x, (self.batch_size, -1))
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class TrainOneStepCell(nn.Cell):
    def __init__(self, network, optimizer, sens=1.0):
        super(TrainOneStepCell, self).__init__(auto_prefix=False)
        self.network = network
        self.weights = ParameterTuple(network.trainable_params())
        self.optimizer = optimizer
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def set_sens(self, value):
        self.sens = value

    def construct(self, data, label):
        weights = self.weights
        loss = self.network(data, label)
        sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.sens)
        grads = self.grad(self.network, weights)(data, label, sens)
        return ops.depend(loss, self.optimizer(grads))


def users_step(network=None, sens=1.0, cls=TrainOneStepCell):
    network = network or LeNet5(10)
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    return cls(WithLossCell(network, loss_cell()), net_opt, sens), network


def builtin_step():
    network = LeNet5(10)
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    return nn.TrainOneStepCell(nn.WithLossCell(network, loss_cell()), net_opt), network


def run_helper(net, dataset, sink_size, epochs, mode=True):
    helper = DatasetHelper(dataset, dataset_sink_mode=mode, sink_size=sink_size,
                           epoch_num=epochs)
    net = connect_network_with_dataset(net, helper)
    outputs = []
    for _ in range(epochs):
        for inputs in helper:
            outputs.append(net(*inputs))
    helper.close()
    return outputs


# --- the same graph, the same numbers ---------------------------------------------------

def test_users_train_one_step_cell_is_the_builtin_graph(small):
    mine, _ = users_step()
    builtin, _ = builtin_step()
    a = _model_of(mine, "test")
    a._ensure(small, "test")
    b = _model_of(builtin, "test")
    b._ensure(small, "test")
    na, nb = a._c.nodes(), b._c.nodes()
    assert na == nb                      # (op, name) of every node, in order
    ops_ = [op for op, _ in na]
    # one forward: the network called in construct is what GradOperation differentiates
    assert ops_.count("conv2d") == 2 and ops_.count("softmax_cross_entropy") == 1
    assert ("param", "conv1.weight") in na and ("param", "moments.fc3.bias") in na


@pytest.mark.long  # results, checked by the plain build; its threads run sanitized in the short tests
def test_dataset_helper_with_users_cell_equals_the_builtin_sink_bit_for_bit(small):
    mine, network = users_step()
    losses = run_helper(mine, small, 10, 3)
    assert len(losses) == 3
    builtin, b_network = builtin_step()
    b_losses = run_helper(builtin, small, 10, 3)
    assert [x.item() for x in losses] == [x.item() for x in b_losses]
    assert_same(values(network), values(b_network))
    m_network = nn.LeNet5(10)
    model = train.Model(m_network, loss_cell(),
                        nn.Momentum(m_network.trainable_params(), 0.01, 0.9))
    model.train(3, small, dataset_sink_mode=True, sink_size=10)
    assert_same(values(network), values(m_network))
    assert not np.array_equal(values(network)["fc3.bias"], values(LeNet5())["fc3.bias"])
    out = losses[-1]
    assert isinstance(out, sluice.Tensor) and out.shape == ()
    assert np.float32(str(out.asnumpy())) == np.float32(out.item()) and np.isfinite(out.item())
    assert "{0}".format(out.asnumpy()) == str(out.item())   # the seed's print


def test_users_cell_in_pynative_mode_without_sinking_and_in_data_sink(small):
    """The same 20 steps: sinking 10 per epoch (GRAPH), host-fed steps
    (PYNATIVE), and data_sink of the user's cell."""
    a, net_a = users_step()
    run_helper(a, small, 10, 2)
    sluice.set_context(mode=sluice.PYNATIVE_MODE)
    b, net_b = users_step()
    steps = run_helper(b, small.take(20), -1, 1, mode=False)
    assert len(steps) == 20
    sluice.set_context(mode=sluice.GRAPH_MODE)
    c, net_c = users_step()
    with sluice.data_sink(c, small, sink_size=20) as sink:
        loss = sink()
    assert loss.item() == steps[-1].item()
    assert_same(values(net_a), values(net_b))
    assert_same(values(net_a), values(net_c))


# --- MindSpore's module paths the script imports ---------------------------------------

def renamed(d):
    """d with its columns named data and target, values unchanged."""
    d = d.map(input_columns="image", output_columns="data", operations=CV.Rescale(1.0, 0.0))
    return d.map(input_columns="label", output_columns="target",
                 operations=CT.TypeCast(mstype.int32))


@pytest.mark.parametrize("users_cell", [False, True])
def test_columns_of_other_names_feed_the_network_in_order(mnist, users_cell):
    """Columns named other than image and label feed Model's network in
    order, as MindSpore does: sink and non-sink training and eval give what
    the named columns give, bit for bit, for the built-in LeNet5 and for a
    Cell of the user's own (traced: its step's inputs take the columns'
    names)."""
    def make():
        network = LeNet5() if users_cell else nn.LeNet5(10)
        model = train.Model(network, loss_cell(), nn.Momentum(network.trainable_params(), 0.01,
                                                              0.9),
                            metrics={"accuracy", "loss"})
        return model, network
    (named, a), (other, b) = make(), make()
    assert renamed(create_dataset(mnist)).get_col_names() == ["data", "target"]
    for sink in (False, True):
        named.train(1, create_dataset(mnist), dataset_sink_mode=sink)
        other.train(1, renamed(create_dataset(mnist)), dataset_sink_mode=sink)
    assert_same(values(a), values(b))
    assert named.eval(create_dataset(mnist)) == other.eval(renamed(create_dataset(mnist)))


def test_module_aliases_are_the_same_objects():
    import sluice.dataset.transforms as transforms
    import sluice.dataset.vision as vision
    assert CT.TypeCast is transforms.TypeCast and CV.Resize is vision.Resize
    assert CV.Inter is vision.Inter and CV.HWC2CHW is vision.HWC2CHW
    assert mstype.int32 == sluice.int32 == "int32" and mstype.float32 == sluice.float32
    assert WithLossCell is nn.WithLossCell and nn.wrap.cell_wrapper.TrainOneStepCell is \
        nn.TrainOneStepCell
    assert context.set_context is sluice.set_context and ops.GradOperation is \
        sluice.functional.GradOperation
    from sluice.common.tensor import Tensor
    assert Tensor is sluice.Tensor


def test_fill_dtype_shape_depend_on_data():
    t = ops.Fill()(mstype.float32, (2, 3), 1.5)
    assert isinstance(t, sluice.Tensor) and t.dtype == "float32" and t.shape == (2, 3)
    assert np.array_equal(t.asnumpy(), np.full((2, 3), 1.5, np.float32))
    assert ops.DType()(t) == "float32" and ops.Shape()(t) == (2, 3)
    assert ops.DType()(np.zeros(4, np.int32)) == "int32" and ops.Shape()(np.zeros((4, 1))) == (4, 1)
    s = ops.Fill()(ops.DType()(t), (), 1.0)
    assert s.shape == () and s.item() == 1.0
    assert ops.depend(t, None) is t
    with pytest.raises(TypeError, match="ops.Fill: give a dtype name"):
        ops.Fill()(mstype.float32, 3, 1.0)


def test_parameter_tuple():
    network = LeNet5()
    weights = ParameterTuple(network.trainable_params())
    assert isinstance(weights, tuple) and [p.name for p in weights][:2] == \
        ["conv1.weight", "conv2.weight"]
    with pytest.raises(TypeError, match="every item must be a Parameter, got int"):
        ParameterTuple([weights[0], 3])
    with pytest.raises(ValueError, match="given twice"):
        ParameterTuple([weights[0], weights[0]])


# --- what sluice refuses, by name ------------------------------------------------------

def test_grad_operation_arguments():
    with pytest.raises(ValueError, match="get_by_list=True"):
        ops.GradOperation()
    with pytest.raises(ValueError, match="get_by_list=True"):
        ops.GradOperation(get_by_list=False, sens_param=True)
    with pytest.raises(ValueError, match="get_all=True .*not supported"):
        ops.GradOperation(get_all=True, get_by_list=True)
    network = LeNet5()
    grad = ops.GradOperation(get_by_list=True)
    with pytest.raises(ValueError, match="give the weights"):
        grad(network)
    with pytest.raises(TypeError, match="built-in sluice.nn.LeNet5"):
        grad(network, nn.LeNet5().trainable_params())
    fn = grad(WithLossCell(network, loss_cell()), network.trainable_params())
    with pytest.raises(RuntimeError, match="GradOperation: .*called on data"):
        fn(np.zeros((32, 1, 32, 32), np.float32), np.zeros(32, np.int32))


class SensCell(TrainOneStepCell):
    """The seed's cell with another sens: set by set_sens, or as given."""

    def __init__(self, network, optimizer, sens):
        super().__init__(network, optimizer)
        self.how = sens

    def construct(self, data, label):
        loss = self.network(data, label)
        if self.how == "traced":
            sens = loss
        elif self.how == "float":
            sens = 1.0
        elif self.how == "shape":
            sens = ops.Fill()(ops.DType()(loss), (1,), 1.0)
        elif self.how == "dtype":
            sens = ops.Fill()(mstype.float64, ops.Shape()(loss), 1.0)
        else:
            sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.how)
        grads = self.grad(self.network, self.weights)(data, label, sens)
        return ops.depend(loss, self.optimizer(grads))


@pytest.mark.parametrize("sens,error,match", [
    (2.0, ValueError, r"sens is 2.0; .*only sens 1.0 is supported"),
    (0.5, ValueError, r"sens is 0.5; .*only sens 1.0"),
    ("traced", TypeError, r"sens is a traced tensor.*ops.Fill"),
    ("float", ValueError, r"sens is float64 \(\) but the loss is float32 \(\).*ops.Fill"),
    ("shape", ValueError, r"sens is float32 \(1,\) but the loss is float32 \(\)"),
    ("dtype", ValueError, r"sens is float64 \(\) but the loss is float32"),
])
def test_a_sens_sluice_does_not_support_is_refused(small, sens, error, match):
    net, _ = users_step(sens=sens, cls=SensCell)
    helper = DatasetHelper(small, dataset_sink_mode=True, sink_size=2)
    with pytest.raises(error, match=match):
        connect_network_with_dataset(net, helper)


def test_set_sens_to_another_value_is_refused_when_traced(small):
    net, _ = users_step()
    net.set_sens(3.0)
    with pytest.raises(ValueError, match="sens is 3.0"):
        sluice.data_sink(net, small)


class NoOptimizer(TrainOneStepCell):
    def construct(self, data, label):
        loss = self.network(data, label)
        sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.sens)
        self.grad(self.network, self.weights)(data, label, sens)
        return loss


class TwoBackwards(TrainOneStepCell):
    def construct(self, data, label):
        loss = self.network(data, label)
        sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.sens)
        self.grad(self.network, self.weights)(data, label, sens)
        grads = self.grad(self.network, self.weights)(data, label, sens)
        return ops.depend(loss, self.optimizer(grads))


class ReturnsGrads(TrainOneStepCell):
    def construct(self, data, label):
        loss = self.network(data, label)
        sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.sens)
        grads = self.grad(self.network, self.weights)(data, label, sens)
        self.optimizer(grads)
        return grads[0]


@pytest.mark.parametrize("cls,match", [
    (NoOptimizer, "applied no optimizer"),
    (TwoBackwards, "already computed gradients"),
    (ReturnsGrads, "must return the loss"),
])
def test_a_step_that_is_not_one_training_step(small, cls, match):
    net, _ = users_step(cls=cls)
    with pytest.raises(ValueError, match=match):
        sluice.data_sink(net, small)


def test_connecting_a_cell_that_is_not_a_training_step(small):
    network = LeNet5()
    helper = DatasetHelper(small, dataset_sink_mode=True, sink_size=2)
    with pytest.raises(ValueError, match="computed no gradients.*GradOperation"):
        connect_network_with_dataset(WithLossCell(network, loss_cell()), helper)
    with pytest.raises(TypeError, match="ReLU.construct must take one argument per dataset "
                       r"column \(image, label\)"):
        connect_network_with_dataset(nn.ReLU(), helper)
    with pytest.raises(TypeError, match="TrainOneStepCell.*or a training Cell of your own"):
        connect_network_with_dataset(nn.LeNet5(), helper)


def test_ascend_is_refused_naming_the_devices_sluice_has():
    with pytest.raises(ValueError, match=r"'Ascend' is not available.*CPU and SIM"):
        context.set_context(mode=context.GRAPH_MODE, device_target="Ascend")
    assert context.get_context("device_target") == "CPU"


# --- the seed's example ----------------------------------------------------------------

@pytest.mark.long
def test_seed004_custom_loop_example_runs():
    fashion_or_fail()
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "seed004_custom_loop.py")
    out = subprocess.run([sys.executable, example], check=True, capture_output=True, text=True,
                         timeout=120, env=python_env()).stdout
    lines = out.splitlines()
    assert lines[0] == "============== Starting Training =============="
    assert len(lines) == 11
    losses = []
    for k, line in enumerate(lines[1:], 1):
        head, value = line.split(", losses: ")
        assert head == f"epoch: {k}/10"
        losses.append(float(value))
    assert all(0 < x < 10 for x in losses)
    assert losses[-1] < 2.0          # 1000 steps of LeNet learn Fashion-MNIST


# --- ops.ReduceMean (the seed's first example's network) -------------------------------

class ReLUReduceMeanDense(nn.Cell):
    """The seed's first network, as written there."""

    def __init__(self, kernel, bias, in_channel, num_class):
        super().__init__()
        self.relu = ops.ReLU()
        self.mean = ops.ReduceMean(keep_dims=False)
        self.dense = nn.Dense(in_channel, num_class, kernel, bias)

    def construct(self, x):
        x = self.relu(x)
        x = self.mean(x, (2, 3))
        x = self.dense(x)
        return x


def test_relu_reduce_mean_dense_loss_and_training(small):
    rng = np.random.default_rng(4)
    w0 = rng.normal(0, 0.5, (10, 1)).astype(np.float32)
    b0 = rng.normal(0, 0.5, (10,)).astype(np.float32)
    image, label = next(iter(small.create_tuple_iterator(num_epochs=1)))
    x = np.maximum(image.asnumpy(), 0).mean(axis=(2, 3), dtype=np.float64)
    logits = x @ w0.T.astype(np.float64) + b0
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    want = -logp[np.arange(32), label.asnumpy()].mean()

    losses, params = [], []
    for mode in (sluice.GRAPH_MODE, sluice.PYNATIVE_MODE):
        sluice.set_context(mode=mode)
        net = ReLUReduceMeanDense(sluice.Tensor(w0), sluice.Tensor(b0), 1, 10)
        step, _ = users_step(net)
        with sluice.data_sink(step, small, sink_size=1) as sink:
            losses.append([sink().item() for _ in range(20)])
        params.append(values(net))
        assert [op for op, _ in _model_of(step, "test")._c.nodes()].count("reduce_mean") == 1
    assert abs(losses[0][0] - want) <= 1e-5 * want
    assert losses[0] == losses[1]
    assert_same(params[0], params[1])
    assert not np.array_equal(params[0]["dense.weight"], w0)


class Mean(nn.Cell):
    def __init__(self, axis, keep_dims=False):
        super().__init__()
        self.axis = axis
        self.mean = ops.ReduceMean(keep_dims)
        self.dense = nn.Dense(32, 10, "zeros", "zeros")

    def construct(self, x):
        x = self.mean(x, self.axis)
        return self.dense(ops.reshape(x, (32, -1)))


@pytest.mark.parametrize("axis,keep,error,match", [
    ((2, 3), True, ValueError, r"Dense\(32, 10\).*\(32, 1\)"),     # (32, 1, 1, 1) -> (32, 1)
    ((1, 2), False, ValueError, r"trailing axes only.*axes \(1, 2\) of a 4-D"),
    ((4,), False, ValueError, "axis 4 is outside a 4-D tensor"),
    ("x", False, TypeError, "axis must be an int or a tuple"),
])
def test_reduce_mean_axes(small, axis, keep, error, match):
    net = Mean(axis, keep)
    with pytest.raises(error, match=match):
        sluice.data_sink(users_step(net)[0], small)


def test_reduce_mean_over_one_trailing_axis_and_all(small):
    """(N, C, H, W) over -1 then the rest: the shapes reach Dense as
    written ((32, 32) after the mean over W of (32, 1, 32, 32))."""
    net = Mean(-1)
    sluice.data_sink(users_step(net)[0], small).close()
    net = Mean((), True)
    with pytest.raises(ValueError, match=r"ops.reshape to \(32, -1\).*\(1, 1, 1, 1\)"):
        sluice.data_sink(users_step(net)[0], small)


# --- the seed's first example: a training cell called on tensors -----------------------

def numpy_step(x, y, w, b):
    """Per-sample losses and the gradients of their sum for relu, mean over
    (H, W), dense, dense-label softmax cross-entropy, in float64."""
    h = np.maximum(x, 0).mean(axis=(2, 3), dtype=np.float64)
    logits = h @ w.T.astype(np.float64) + b
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    losses = -(y * logp).sum(1)
    d = np.exp(logp) * y.sum(1, keepdims=True) - y
    return losses, d.T @ h, d.sum(0)


def test_train_one_step_cell_called_on_tensors_against_numpy():
    rng = np.random.default_rng(9)
    w0 = rng.normal(0, 0.5, (5, 8)).astype(np.float32)
    b0 = rng.normal(0, 0.5, (5,)).astype(np.float32)
    net = ReLUReduceMeanDense(sluice.Tensor(w0), sluice.Tensor(b0), 8, 5)
    opt = nn.Momentum(learning_rate=0.1, momentum=0.1,
                      params=filter(lambda x: x.requires_grad, net.get_parameters()))
    train_network = nn.TrainOneStepCell(WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits()), opt)
    train_network.set_train()
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    acc_w, acc_b = np.zeros_like(w), np.zeros_like(b)
    for step in range(3):
        x = rng.normal(0, 1, (4, 8, 3, 3)).astype(np.float32)
        y = rng.uniform(0, 1, (4, 5)).astype(np.float32)      # not one-hot
        losses, gw, gb = numpy_step(x, y, w, b)
        got = train_network(sluice.Tensor(x), y if step % 2 else sluice.Tensor(y))
        assert isinstance(got, sluice.Tensor) and got.shape == (4,)
        np.testing.assert_allclose(got.asnumpy(), losses, rtol=1e-5)
        acc_w, acc_b = 0.1 * acc_w + gw, 0.1 * acc_b + gb
        w, b = w - 0.1 * acc_w, b - 0.1 * acc_b
        np.testing.assert_allclose(net.dense.weight.asnumpy(), w, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(net.dense.bias.asnumpy(), b, rtol=1e-4, atol=1e-6)
    assert len(train_network.__dict__["_sl_eager"]) == 1          # compiled once


def test_called_on_tensors_in_either_mode_and_the_sparse_loss():
    """One-hot dense labels with the mean train as the sparse mean loss does,
    bit for bit, and GRAPH as PYNATIVE."""
    rng = np.random.default_rng(2)
    xs = [rng.normal(0, 1, (4, 8, 3, 3)).astype(np.float32) for _ in range(3)]
    ys = [rng.integers(0, 5, 4).astype(np.int32) for _ in range(3)]
    w0 = rng.normal(0, 0.5, (5, 8)).astype(np.float32)
    results = []
    for sparse, mode in ((True, sluice.GRAPH_MODE), (False, sluice.GRAPH_MODE),
                         (False, sluice.PYNATIVE_MODE)):
        sluice.set_context(mode=mode)
        net = ReLUReduceMeanDense(w0, np.zeros(5, np.float32), 8, 5)
        cell = nn.TrainOneStepCell(
            WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse, reduction="mean")),
            nn.Momentum(net.trainable_params(), 0.1, 0.9))
        losses = [cell(x, y if sparse else np.eye(5, dtype=np.float32)[y]).item()
                  for x, y in zip(xs, ys)]
        results.append((losses, values(net)))
    for losses, params in results[1:]:
        assert losses == results[0][0]
        assert_same(params, results[0][1])


def test_seed004_first_example_runs():
    example = os.path.join(os.path.dirname(__file__), "..", "examples",
                           "seed004_custom_network.py")
    out = subprocess.run([sys.executable, example], check=True, capture_output=True, text=True,
                         timeout=120, env=python_env()).stdout
    head, values_ = out.split("[", 1)
    assert head == "-------loss------ "
    assert np.array_equal(np.array(values_.rstrip().rstrip("]").split(), float), np.zeros(32))


def test_what_is_not_run_on_tensors_says_so(mnist):
    with pytest.raises(RuntimeError, match="called on str"):
        LeNet5()("image")
    net = ReLUReduceMeanDense(np.ones((5, 8), np.float32), np.ones(5, np.float32), 8, 5)
    cell = nn.TrainOneStepCell(WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits()),
                               nn.Momentum(net.trainable_params(), 0.1, 0.9))
    with pytest.raises(TypeError, match="float32 or int32, got data float64"):
        cell(np.zeros((4, 8, 3, 3)), np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"labels 'label' \(4, 4\) must have the shape of "
                       r"logits .* \(4, 5\)"):
        cell(np.zeros((4, 8, 3, 3), np.float32), np.zeros((4, 4), np.float32))
    # a per-sample loss trains by calls only
    d = create_dataset(mnist)
    d = d.map(input_columns="label", operations=[CT.OneHot(10), CT.TypeCast(mstype.float32)])
    with pytest.raises(ValueError, match=r"loss is per sample, of shape \(32,\).*"
                       "reduction='mean'"):
        sluice.data_sink(users_step(LeNet5(), cls=PerSample)[0], d.repeat())
    # the built-in LeNet5 is compiled with the sparse loss
    builtin = nn.LeNet5()
    with pytest.raises(ValueError, match="sparse mean loss"):
        train.Model(builtin, nn.SoftmaxCrossEntropyWithLogits(reduction="mean"),
                    nn.Momentum(builtin.trainable_params(), 0.1, 0.9))


class PerSample(TrainOneStepCell):
    """The seed's cell over the per-sample loss (reduction 'none')."""

    def __init__(self, network, optimizer, sens=1.0):
        network = WithLossCell(network.backbone, nn.SoftmaxCrossEntropyWithLogits())
        super().__init__(network, optimizer, sens)


class SensOfSamples(nn.Cell):
    """A training cell over a per-sample loss with the sens it is given."""

    def __init__(self, network, optimizer, sens):
        super().__init__(auto_prefix=False)
        self.network = network
        self.weights = ParameterTuple(network.trainable_params())
        self.optimizer = optimizer
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label, self.sens)
        return ops.depend(loss, self.optimizer(grads))


@pytest.mark.parametrize("sens,match", [
    (np.ones(4, np.float32), None),
    (np.full(4, 2.0, np.float32), "sens is 2.0;"),
    (np.arange(4, dtype=np.float32), "sens is not 1.0 everywhere"),
    (np.ones(5, np.float32), r"sens is float32 \(5,\) but the loss is float32 \(4,\)"),
])
def test_sens_of_a_per_sample_loss(sens, match):
    net = ReLUReduceMeanDense(np.ones((5, 8), np.float32), np.ones(5, np.float32), 8, 5)
    cell = SensOfSamples(WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits()),
                         nn.Momentum(net.trainable_params(), 0.1, 0.9), sluice.Tensor(sens))
    x, y = np.ones((4, 8, 3, 3), np.float32), np.eye(5, dtype=np.float32)[:4]
    if match is None:
        assert cell(x, y).shape == (4,)
    else:
        with pytest.raises(ValueError, match=match):
            cell(x, y)
