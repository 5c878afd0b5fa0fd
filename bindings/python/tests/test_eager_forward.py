"""A network of the user's own called on tensors outside a traced step
(``net(x)``, MindSpore's eager call): a forward pass on the network's
current weights, compiled on the first call per shape, as ``jit`` does.
The built-in LeNet5, which runs compiled whole, says what to write
instead."""
import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.nn as nn
import sluice.ops as ops
from sluice import train
from conftest import assert_same, loss_cell, values
from test_shared_params import SmallNet, create_dataset


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


def first_batch(data):
    for image, label in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        return np.array(image), np.array(label)


def numpy_loss(logits, labels):
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


@pytest.mark.parametrize("mode", [sluice.GRAPH_MODE, sluice.PYNATIVE_MODE])
def test_net_of_x_is_the_forward_pass_model_eval_scores(mnist, mode):
    """net(x) gives the logits whose accuracy and loss Model.eval reports
    for the same batch, on the weights as training left them, and does
    not disturb them: training goes on from where it was."""
    sluice.set_context(mode=mode)
    data = create_dataset(mnist, shuffle=False).take(1)
    x, y = first_batch(data)
    net = SmallNet()
    model = train.Model(net, loss_cell(), nn.Momentum(net.trainable_params(), 0.01, 0.9),
                        metrics={"accuracy", "loss"})
    before = net(x)
    model.train(2, create_dataset(mnist))
    logits = net(sluice.Tensor(x))
    assert isinstance(logits, sluice.Tensor) and logits.shape == (32, 10)
    logits = logits.asnumpy()
    assert not np.array_equal(logits, before.asnumpy())     # the trained weights
    scored = model.eval(data)
    assert scored["accuracy"] == np.mean(logits.argmax(axis=1) == y)
    assert scored["loss"] == pytest.approx(numpy_loss(logits, y), rel=1e-5)
    # WithLossCell on tensors: the loss of the same forward pass
    loss = nn.WithLossCell(net, loss_cell())(x, y)
    assert loss.shape == () and loss.item() == pytest.approx(numpy_loss(logits, y), rel=1e-5)

    # the calls took the weights without changing them: training goes on
    # exactly as a network's no one called
    model.train(1, create_dataset(mnist))
    sluice.set_seed(0)
    ref_net = SmallNet()
    ref = train.Model(ref_net, loss_cell(), nn.Momentum(ref_net.trainable_params(), 0.01, 0.9))
    ref.train(2, create_dataset(mnist))
    ref.train(1, create_dataset(mnist))
    assert_same(values(net), values(ref_net))
    assert np.array_equal(net(x).asnumpy(), ref_net(x).asnumpy())


class TwoHeads(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = SmallNet()

    def construct(self, x):
        logits = self.body(x)
        return logits, ops.relu(logits)


def test_a_tuple_of_outputs_and_another_shape(mnist):
    """A construct returning a tuple gives a tuple of Tensors; another
    batch shape compiles once more."""
    x, _ = first_batch(create_dataset(mnist, shuffle=False))
    net = TwoHeads()
    logits, relu = net(x)
    assert np.array_equal(relu.asnumpy(), np.maximum(logits.asnumpy(), 0))
    few = net(x[:3])[0].asnumpy()
    assert few.shape == (3, 10)
    assert np.allclose(few, logits.asnumpy()[:3], rtol=1e-5, atol=1e-6)


def test_what_cannot_run_on_tensors_says_what_to_write(mnist):
    x = np.zeros((32, 1, 32, 32), np.float32)
    with pytest.raises(TypeError, match=r"built-in LeNet5 .*Model\(net, metrics=.*\.eval\("
                       r"dataset\), or write it as a Cell"):
        nn.LeNet5()(x)
    with pytest.raises(TypeError, match="float32 or int32"):
        SmallNet()(x.astype(np.float64))
    with pytest.raises(RuntimeError, match=r"net\(x\): a forward pass on the current weights"):
        SmallNet()(x, label=np.zeros(32, np.int32))


# --- MindSpore 2's functional pieces: what runs, and what to write instead ----------

def test_cross_entropy_loss_is_the_softmax_cross_entropy(mnist):
    """nn.CrossEntropyLoss against class indices trains as the sparse mean
    SoftmaxCrossEntropyWithLogits does, bit for bit; against class
    probabilities it is the dense one."""
    results = []
    for loss in (nn.CrossEntropyLoss(), loss_cell()):
        sluice.set_seed(0)
        net = SmallNet()
        train.Model(net, loss, nn.Momentum(net.trainable_params(), 0.01, 0.9)).train(
            1, create_dataset(mnist))
        results.append(values(net))
    assert_same(results[0], results[1])
    x, y = first_batch(create_dataset(mnist, shuffle=False))
    probs = np.eye(10, dtype=np.float32)[y]
    net = SmallNet()
    for reduction in ("mean", "none"):
        mine = nn.WithLossCell(net, nn.CrossEntropyLoss(reduction=reduction))(x, probs)
        theirs = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
            sparse=False, reduction=reduction))(x, probs)
        assert np.array_equal(mine.asnumpy(), theirs.asnumpy())
    for kwargs, match in [(dict(weight=np.ones(10)), "weight must be None"),
                          (dict(label_smoothing=0.1), "label_smoothing must be 0.0"),
                          (dict(reduction="sum"), "'mean' or 'none'")]:
        with pytest.raises(ValueError, match=match):
            nn.CrossEntropyLoss(**kwargs)
    with pytest.raises(ValueError, match=r"against class indices .*\(reduction='mean'\)"):
        nn.WithLossCell(net, nn.CrossEntropyLoss(reduction="none"))(x, y)


def plain_functional(net):
    """MindSpore 2's functional pieces over net: grad_fn, the optimizer and
    train_step, as the docs write them."""
    net_opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)

    def forward_fn(data, label):
        return loss_cell()(net(data), label)
    grad_fn = sluice.value_and_grad(forward_fn, None, net.trainable_params())

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        net_opt(grads)
        return loss
    return train_step, grad_fn, net_opt


@pytest.mark.parametrize("mode", [sluice.GRAPH_MODE, sluice.PYNATIVE_MODE])
def test_a_plain_loop_of_train_step_trains_as_data_sink(mnist, mode):
    """MindSpore 2's train_step(data, label) called in a plain loop over the
    dataset's batches trains exactly as data_sink(train_step) over the same
    batches: the same losses and parameters, bit for bit."""
    sluice.set_context(mode=mode)
    data = create_dataset(mnist)
    net = SmallNet()
    train_step, _, _ = plain_functional(net)
    losses = []
    batches = data.create_tuple_iterator(num_epochs=2)
    for epoch in range(2):
        for x, y in batches:                     # each pass is the next epoch
            loss = train_step(x, y)
            losses.append(float(loss))
    assert len(losses) == 6 and loss.shape == () and f"{loss}" == str(loss.asnumpy())

    sluice.set_seed(0)
    ref_net = SmallNet()
    ref_step, _, _ = plain_functional(ref_net)
    sink = sluice.data_sink(ref_step, data, sink_size=1,
                            jit_config=sluice.JitConfig() if mode == sluice.GRAPH_MODE else None)
    ref_losses = [sink().item() for _ in range(6)]
    sink.close()
    assert losses == ref_losses
    assert_same(values(net), values(ref_net))


def test_a_plain_loops_loss_and_optimizer_are_checked(mnist):
    net = SmallNet()
    _, grad_fn, net_opt = plain_functional(net)
    x, y = first_batch(create_dataset(mnist, shuffle=False))
    loss, grads = grad_fn(x, y)
    with pytest.raises(RuntimeError, match=r"known once the step has run.*net_opt\(grads\)"):
        float(loss)
    net_opt(grads)
    loss, grads = grad_fn(x, y)          # compiled: the same optimizer runs it
    with pytest.raises(ValueError, match="applies another optimizer"):
        nn.SGD(net.trainable_params(), 0.1)(grads)
    with pytest.raises(TypeError, match="value_and_grad: the function was called on list"):
        grad_fn([1.0], y)


def test_has_aux_as_mindspore_2s_quick_start_writes_it(mnist):
    """forward_fn returns (loss, logits) and grad_fn has_aux=True, as the
    quick start has: the same training as without aux, in a plain loop and
    in data_sink, and the logits are the step's forward pass."""
    x, y = first_batch(create_dataset(mnist, shuffle=False))
    results = []
    for has_aux in (False, True):
        sluice.set_seed(0)
        net = SmallNet()
        optimizer = nn.SGD(net.trainable_params(), 0.05)

        def forward_fn(data, label):
            logits = net(data)
            loss = nn.CrossEntropyLoss()(logits, label)
            return (loss, logits) if has_aux else loss
        grad_fn = sluice.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=has_aux)

        def train_step(data, label):
            if has_aux:
                (loss, _), grads = grad_fn(data, label)
            else:
                loss, grads = grad_fn(data, label)
            optimizer(grads)
            return loss
        losses = [float(train_step(x, y)) for _ in range(2)]
        sink = sluice.data_sink(train_step, create_dataset(mnist).repeat(), sink_size=2)
        losses.append(sink().item())
        sink.close()
        results.append((losses, values(net)))
    assert results[0][0] == results[1][0]
    assert_same(results[0][1], results[1][1])
    before = net(x).asnumpy()
    (loss, logits), grads = grad_fn(x, y)
    optimizer(grads)
    assert logits.shape == (32, 10)
    assert np.array_equal(logits.asnumpy(), before)
    assert float(loss) == pytest.approx(numpy_loss(before, y), rel=1e-5)
    with pytest.raises(TypeError, match=r"has_aux=True fn must return a tuple \(loss, aux"):
        sluice.value_and_grad(lambda d, l: loss_cell()(net(d), l), None,
                              net.trainable_params(), has_aux=True)(x, y)


class QuickStartNetwork(nn.Cell):
    """MindSpore 2's quick start network, as written there."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28 * 28, 512),
            nn.ReLU(),
            nn.Dense(512, 512),
            nn.ReLU(),
            nn.Dense(512, 10)
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


def test_mindspore_2_quick_start_trains_in_a_plain_loop(mnist, tmp_path):
    """The quick start's pipeline (batch 64 without drop_remainder: a short
    last batch, compiled for its own shape), SequentialCell network,
    CrossEntropyLoss, has_aux grad_fn and plain train_step loop; then its
    checkpoint reloaded into a fresh network predicts the same."""
    from sluice.dataset import transforms, vision

    def datapipe(dataset, batch_size):
        image_transforms = [vision.Rescale(1.0 / 255.0, 0),
                            vision.Normalize(mean=(0.1307,), std=(0.3081,)),
                            vision.HWC2CHW()]
        dataset = dataset.map(image_transforms, 'image')
        dataset = dataset.map(transforms.TypeCast(sluice.int32), 'label')
        return dataset.batch(batch_size)
    train_dataset = datapipe(ds.MnistDataset(mnist, usage='train'), 64)    # 64 + 36
    model = QuickStartNetwork()
    assert [p.name for p in model.trainable_params()][:2] == [
        "dense_relu_sequential.0.weight", "dense_relu_sequential.0.bias"]
    assert len(model.dense_relu_sequential) == 5
    assert isinstance(model.dense_relu_sequential[1], nn.ReLU)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.SGD(model.trainable_params(), 1e-2)

    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        return loss, logits
    grad_fn = sluice.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    def train_step(data, label):
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)
        return loss
    before = values(model)
    losses = []
    for epoch in range(2):
        for data, label in train_dataset.create_tuple_iterator():
            losses.append(float(train_step(data, label)))
    assert len(losses) == 4 and all(np.isfinite(losses))
    assert not np.array_equal(before["dense_relu_sequential.4.bias"],
                              values(model)["dense_relu_sequential.4.bias"])

    sluice.save_checkpoint(model, str(tmp_path / "model.ckpt"))
    fresh = QuickStartNetwork()
    assert sluice.load_param_into_net(fresh, sluice.load_checkpoint(
        str(tmp_path / "model.ckpt"))) == []
    x, _ = first_batch(train_dataset)
    assert np.array_equal(fresh(x).asnumpy(), model(x).asnumpy())
    with pytest.raises(TypeError, match="SequentialCell: item '1' is a int, not a Cell"):
        nn.SequentialCell(nn.ReLU(), 3)


def test_tensor_equality_is_refused_rather_than_identity():
    """pred == label between Tensors was Python's identity, False for two
    tensors of equal values, where MindSpore compares element by element:
    a silently wrong answer, now a TypeError saying what to write. A
    Tensor stays hashable, by identity."""
    a = sluice.Tensor(np.arange(4, dtype=np.int32))
    b = sluice.Tensor(np.arange(4, dtype=np.int32))
    for compare in (lambda: a == b, lambda: a != b, lambda: a == 1):
        with pytest.raises(TypeError, match=r"no element-wise (==|!=): compare its values as "
                           r"numpy arrays, t.asnumpy\(\) (==|!=) u.asnumpy\(\)"):
            compare()
    assert (a.asnumpy() == b.asnumpy()).all()
    assert {a: 1}[a] == 1 and a is not b and len({a, b}) == 2
