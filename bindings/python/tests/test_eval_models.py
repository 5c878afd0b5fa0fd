"""Models that evaluate a network of the user's own as MindSpore's do: made
without an optimizer (or a loss), from a checkpoint reloaded into a fresh
network (the quick start), and over a dataset whose last batch is short
(drop_remainder=False), padded as the built-in LeNet5's is."""
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.nn as nn
from sluice import train
from sluice.nn import Accuracy
from conftest import loss_cell, make_mnist
from test_shared_params import SmallNet, create_dataset
from test_trace import LeNet5 as SeedLeNet5


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    yield
    ds.config.set_seed(0)
    sluice.set_seed(0)
    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")


@pytest.fixture
def root(tmp_path):
    """100 train samples (3 batches), 40 test samples (32 and a short 8)."""
    return make_mnist(tmp_path / "mnist", 100, 40)


def test_quick_start_reload_into_a_fresh_net_for_an_eval_only_model(root, tmp_path):
    """The quick start: train with ModelCheckpoint, load the file into a
    fresh network, evaluate it with a Model that has no optimizer."""
    net = SmallNet()
    model = train.Model(net, loss_cell(), nn.Momentum(net.trainable_params(), 0.01, 0.9),
                        metrics={"Accuracy": Accuracy()})
    ckpt = train.ModelCheckpoint(prefix="checkpoint_net", directory=str(tmp_path / "ck"),
                                 config=train.CheckpointConfig(save_checkpoint_steps=6))
    model.train(2, create_dataset(root), callbacks=[ckpt])
    test = create_dataset(root, usage="test", drop_remainder=False)
    trained = model.eval(test)

    fresh = SmallNet()
    param_dict = sluice.load_checkpoint(str(tmp_path / "ck" / "checkpoint_net-2_3.ckpt"))
    assert sluice.load_param_into_net(fresh, param_dict) == []
    eval_only = train.Model(fresh, loss_cell(), metrics={"Accuracy": Accuracy()})
    assert eval_only.eval(test) == trained
    no_loss = train.Model(fresh, metrics={"Accuracy": Accuracy()})
    assert no_loss.eval(test) == trained
    with pytest.raises(ValueError, match="no optimizer"):
        eval_only.train(1, create_dataset(root))


@pytest.mark.parametrize("sink", [True, False])
def test_a_short_last_batch_of_a_users_cell_counts_its_real_rows(root, sink):
    """Seed 001's LeNet5 written as a Cell (the built-in one node for node)
    evaluates a dataset whose last batch is short exactly as the built-in
    does, whether evaluation or training compiled it."""
    test = create_dataset(root, usage="test", drop_remainder=False)
    assert test.get_batch_size() == 32 and test.output_shapes()[0][0] == -1
    mine = SeedLeNet5()
    builtin = nn.LeNet5(10)
    metrics = {"accuracy", "loss"}
    first = train.Model(mine, loss_cell(), metrics=metrics).eval(test, dataset_sink_mode=sink)
    assert first == train.Model(builtin, loss_cell(), metrics=metrics).eval(test)
    assert 0 < first["loss"]

    opt_mine = nn.Momentum(mine.trainable_params(), 0.01, 0.9)
    opt_builtin = nn.Momentum(builtin.trainable_params(), 0.01, 0.9)
    trained = train.Model(mine, loss_cell(), opt_mine, metrics=metrics)
    trained.train(1, create_dataset(root), dataset_sink_mode=sink)
    reference = train.Model(builtin, loss_cell(), opt_builtin, metrics=metrics)
    reference.train(1, create_dataset(root), dataset_sink_mode=sink)
    assert trained.eval(test) == reference.eval(test) != first


def test_eval_only_without_a_loss_needs_class_labels(root):
    """Accuracy counts int32 class indices: float labels are refused,
    saying what to map."""
    test = create_dataset(root, usage="test").map(
        operations=transforms.TypeCast(sluice.float32), input_columns="label")
    with pytest.raises(ValueError, match=r"labels \('label'\) are float32.*TypeCast"):
        train.Model(SmallNet(), metrics={"accuracy"}).eval(test)
