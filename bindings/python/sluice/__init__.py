"""sluice: a threaded C dataset engine and trainer for Python.

sluice reads samples (MNIST IDX files, folders of JPEGs), transforms them in
worker threads of its C engine, shuffles and batches them, and hands the
batches to Python without a copy: a batch is a :class:`Tensor` whose memory
numpy (buffer protocol) and PyTorch (DLPack) share. Waiting for a batch
releases the GIL, so no worker processes are needed.

The names follow ``mindspore.dataset``::

    import sluice
    import sluice.dataset as ds
    import sluice.dataset.vision as vision
    import sluice.dataset.transforms as transforms

    d = ds.MnistDataset("/usr/share/datasets/fashion-mnist", usage="train")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / 0.3081, -0.1307 / 0.3081),
                          vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=2)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.shuffle(10000).batch(32, drop_remainder=True)
    for image, label in d.create_tuple_iterator(num_epochs=1):
        ...                                  # image: Tensor float32 (32, 1, 32, 32)

``d.to_torch()`` gives an iterable of torch tensors to use where a
``torch.utils.data.DataLoader`` was.

Element types are named by strings; :data:`uint8`, :data:`int32`,
:data:`uint32`, :data:`int64`, :data:`float32` and :data:`float64` hold them,
as ``mindspore.int32`` and friends do.

Training follows ``mindspore.nn`` and ``mindspore.train``: the seeds' LeNet
script runs with ``import sluice`` where it had ``import mindspore``::

    import sluice.nn as nn
    from sluice import train

    sluice.set_context(mode=sluice.GRAPH_MODE, device_target="CPU")
    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    model = train.Model(network, net_loss, net_opt, metrics={"accuracy"})  # or sluice.Model
    model.train(1, d, callbacks=[train.LossMonitor(), train.TimeMonitor()],
                dataset_sink_mode=True)

Your own networks (a :class:`sluice.nn.Cell` of Conv2d, Dense, ReLU,
MaxPool2d layers with a ``construct``) are traced into the C graph, and
the functional loop of the seeds runs too: :func:`value_and_grad` (see
:mod:`sluice.functional`), an optimizer called on the grads, and
``sluice.data_sink(train_step, dataset, sink_size, jit_config)``.

Training runs in sluice's C executor with the GIL released; see
:mod:`sluice.train` (Model, callbacks, DatasetHelper, :func:`data_sink`,
checkpoints) and :mod:`sluice.context` (:func:`set_context`,
:func:`set_seed`).

Data parallel across processes: under ``mpirun -np N``,
:func:`sluice.communication.init`, ``set_auto_parallel_context(
parallel_mode="data_parallel")`` and a dataset sharded with
``num_shards=get_group_size(), shard_id=get_rank()`` (see
:mod:`sluice.communication`).
"""
from sluice import _sluice
from sluice._sluice import Tensor

__version__ = _sluice.version()

#: Element type names (``transforms.TypeCast(sluice.int32)``).
uint8 = "uint8"
int32 = "int32"
uint32 = "uint32"
int64 = "int64"
float32 = "float32"
float64 = "float64"

from sluice import dataset  # noqa: E402  (needs the names above)
from sluice.context import (GRAPH_MODE, PYNATIVE_MODE, ParallelMode,  # noqa: E402
                            get_auto_parallel_context, get_context, get_seed,
                            reset_auto_parallel_context, set_auto_parallel_context,
                            set_context, set_seed)
from sluice import common, communication, context, nn, ops, train  # noqa: E402
from sluice.functional import JitConfig, value_and_grad  # noqa: E402
from sluice.train import (Model, data_sink, load_checkpoint,  # noqa: E402
                          load_param_into_net, save_checkpoint)
from sluice.common import dtype  # noqa: E402  (``from sluice import dtype as mstype``)

__all__ = ["Tensor", "dataset", "uint8", "int32", "uint32", "int64", "float32", "float64",
           "__version__", "context", "nn", "train", "GRAPH_MODE", "PYNATIVE_MODE",
           "set_context", "get_context", "set_seed", "get_seed", "data_sink",
           "save_checkpoint", "load_checkpoint", "load_param_into_net", "common", "ops",
           "value_and_grad", "JitConfig", "Model", "dtype", "communication", "ParallelMode",
           "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context"]
