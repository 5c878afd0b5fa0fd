"""sluice.train.dataset_helper: custom training loops and data_sink, as
``mindspore.train.dataset_helper`` and ``mindspore.data_sink``.

Both run a compiled training step on the device: the C library's pipeline
fills the device's queue (through a transfer thread, or, on the cpu device
with compute threads for every CPU, moved by the executor itself between
steps) and the executor runs the steps, taking each batch with GetNext. The step is a
:class:`sluice.nn.TrainOneStepCell` (a network, its loss and optimizer; the
network the built-in LeNet5 or your own Cell); a training Cell of your
own, as seed 004 writes its TrainOneStepCell (``construct(data, label)``
computing the loss, its gradients with :class:`sluice.ops.GradOperation`
and the optimizer's updates); or, for data_sink, the seed's plain
``train_step(data, label)`` built on :func:`sluice.value_and_grad`. The
last two are traced once into a C graph (:mod:`sluice.train.tracing`)::

    train_net = nn.TrainOneStepCell(nn.WithLossCell(network, net_loss), net_opt)

    helper = DatasetHelper(ds_train, dataset_sink_mode=True, sink_size=100, epoch_num=10)
    net = connect_network_with_dataset(train_net, helper)
    for epoch in range(10):
        for inputs in helper:          # one sink of 100 steps has run
            output = net(*inputs)      # its loss
            print(output.asnumpy())

    sink_process = sluice.data_sink(train_net, ds_train, sink_size=ds_train.get_dataset_size())
    loss = sink_process()              # one epoch, the last step's loss

Their threads run until :meth:`~DatasetHelper.close` (or ``with``, or the
object is dropped, or the interpreter exits).
"""
import atexit
import operator
import weakref

from sluice import _sluice, nn
from sluice.dataset import Dataset

__all__ = ["DatasetHelper", "connect_network_with_dataset", "data_sink"]

# Every helper and sink with running threads, so that the interpreter's exit
# stops them before it tears Python down (a Python map operation in a
# pipeline worker would otherwise wait for the GIL forever).
_live = weakref.WeakSet()


@atexit.register
def _close_live():
    for obj in list(_live):
        obj.close()


def _sink_size(value, what, allow_whole):
    value = operator.index(value)
    if value == 0 or value < (-1 if allow_whole else 1):
        raise ValueError(f"{what}: sink_size must be "
                         f"{'-1 (the whole epoch) or ' if allow_whole else ''}> 0, got {value}")
    return value


def _model_of(network, what):
    """What runs network's steps: the Model of a sluice.nn.TrainOneStepCell,
    or the TracedStep of a training Cell of the user's own (made once, kept
    on the cell)."""
    if isinstance(network, nn.TrainOneStepCell):
        return network._get_model()
    if nn._is_traced(network):
        from sluice.train.tracing import TracedStep
        step = network.__dict__.get("_sl_step")
        if step is None:
            step = TracedStep(network)
            network.__dict__["_sl_step"] = step
        return step
    raise TypeError(f"{what}: the network must be a sluice.nn.TrainOneStepCell"
                    "(WithLossCell(network, loss_fn), optimizer) or a training Cell of your "
                    "own (a construct computing the loss, its gradients with "
                    "ops.GradOperation and the optimizer's updates): sluice sinks compiled "
                    f"training steps (got {type(network).__name__})")


class DatasetHelper:
    """Iterates a dataset for a custom training loop, as MindSpore's
    DatasetHelper: once connected to a training network
    (:func:`connect_network_with_dataset`), each ``for`` loop over it is one
    epoch, and iterating trains.

    Args:
        dataset (Dataset): rows with the network's ``image`` and ``label``.
        dataset_sink_mode (bool): sink the data (default True): each epoch
            yields once, after a sink of ``sink_size`` steps has run on the
            device. False: the host feeds the steps and each epoch yields
            after every step.
        sink_size (int): steps per sink; -1 (the default): the whole epoch.
            With N > 0 the dataset is traversed without end, each epoch
            continuing where the last one stopped.
        epoch_num (int): epochs (default 1); later loops yield nothing.

    Each item is a tuple to call the connected network with, which returns
    the loss of the last step run (a 0-d :class:`sluice.Tensor`).
    """

    def __init__(self, dataset, dataset_sink_mode=True, sink_size=-1, epoch_num=1):
        self.dataset = dataset
        self.dataset_sink_mode = bool(dataset_sink_mode)
        self._sink_size = _sink_size(sink_size, "DatasetHelper", True)
        self.epoch_num = operator.index(epoch_num)
        if self.epoch_num < 1:
            raise ValueError(f"DatasetHelper: epoch_num must be >= 1, got {self.epoch_num}")
        self._c = None

    def sink_size(self):
        """Steps per sink (-1: the whole epoch)."""
        return self._sink_size

    def _connect(self, model):
        from sluice import context
        if self._c is not None:
            raise RuntimeError("DatasetHelper: already connected to a network")
        context._train_alone("DatasetHelper")
        model._check_dataset(self.dataset, "DatasetHelper", True,
                             needs_end=self.dataset_sink_mode and self._sink_size == -1)
        model._ensure(self.dataset, "DatasetHelper")
        self._model = model
        self._c = _sluice.DatasetHelper(model._c, self.dataset._c, self.dataset_sink_mode,
                                        self._sink_size, self.epoch_num)
        _live.add(self)

    def __iter__(self):
        if self._c is None:
            raise RuntimeError("DatasetHelper: connect it to a training network first "
                               "(connect_network_with_dataset): iterating it trains")
        return self._epoch()

    def _epoch(self):
        while True:
            self._model._claim()
            status, loss = self._c.next()
            if status != 0:
                return
            yield (loss,)

    def close(self):
        """Stops the pipeline (and the transfer thread, if any) and joins them."""
        if self._c is not None:
            self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _ConnectedNetwork:
    """The network connect_network_with_dataset returns: called with an item
    of its helper, it returns the loss that item's sink (or step) ended with
    (the training ran while the helper yielded it)."""

    def __init__(self, network):
        self.network = network

    def __call__(self, loss):
        return loss


def connect_network_with_dataset(network, dataset_helper):
    """Connects a training network to a :class:`DatasetHelper`: its C model
    is made (if it is not yet) and the helper's pipeline (and, in sink
    mode, its transfer thread if it has one) starts. Returns the network to call with each
    item of the helper.

    The network is a :class:`sluice.nn.TrainOneStepCell`, or a training
    Cell of your own whose ``construct`` takes one argument per dataset
    column, computes the loss, its gradients
    (:class:`sluice.ops.GradOperation`) and the optimizer's updates, and
    returns the loss (``ops.depend(loss, self.optimizer(grads))``). That
    construct is traced once, with the dataset's batch shapes and the
    context's mode, into one compiled step; what sluice cannot trace raises
    an error naming it."""
    if not isinstance(dataset_helper, DatasetHelper):
        raise TypeError("connect_network_with_dataset: dataset_helper must be a DatasetHelper")
    dataset_helper._connect(_model_of(network, "connect_network_with_dataset"))
    return _ConnectedNetwork(network)


class _SinkProcess:
    """What :func:`data_sink` returns: each call runs sink_size steps and
    returns the last step's loss (a 0-d :class:`sluice.Tensor`)."""

    def __init__(self, c, claim=None):
        self._c = c
        self._claim = claim
        _live.add(self)

    def __call__(self):
        if self._claim is not None:
            self._claim()   # the parameters' latest values, wherever they are
        return self._c()

    def close(self):
        """Stops the pipeline and the transfer thread (if any) and joins them."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def data_sink(fn, dataset, sink_size=1, jit_config=None, input_signature=None):
    """MindSpore's data_sink: binds a training step to a dataset.

    Args:
        fn: the step: a :class:`sluice.nn.TrainOneStepCell`, a training Cell
            of your own (see :func:`connect_network_with_dataset`), or a
            Python function of the dataset's columns (``train_step(data, label)``)
            that calls a :func:`sluice.value_and_grad` function, applies an
            optimizer to its grads (``net_opt(grads)``) and returns the loss.
            The function is traced once, on symbolic tensors shaped like the
            dataset's batches, into one compiled step (forward, loss,
            backward, updates); anything it does that sluice cannot trace
            raises an error naming it.
        dataset (Dataset): the step's inputs, one column per argument, of a
            fixed batch shape.
        sink_size (int): steps each call runs on the device (default 1).
        jit_config (JitConfig): for a function step, GRAPH mode (memory
            planned once); None (the default) runs it op by op, PYNATIVE
            mode, as MindSpore's None does. Both give the same numbers, bit
            for bit. A Cell runs in the context's mode.
        input_signature: None only (the shapes come from the dataset).

    Returns a callable; each call runs ``sink_size`` steps and returns the
    last one's loss. Calls continue the traversal where the previous one
    stopped, across epochs, so two calls of 50 steps train exactly as one
    of 100. The network's parameters (and the optimizer's accumulators)
    carry over from one data_sink or Model to the next. The pipeline (and
    the transfer thread, if any) start now and run until ``close()``. Ctrl-C during
    a call raises KeyboardInterrupt; the next call continues. A batch of
    another shape than the first fails the call with RuntimeError.
    """
    from sluice import context
    from sluice.functional import JitConfig
    from sluice.train.tracing import claim, trace_step
    sink_size = _sink_size(sink_size, "data_sink", False)
    context._train_alone("data_sink")
    if jit_config is not None and not isinstance(jit_config, JitConfig):
        raise TypeError(f"data_sink: jit_config must be a sluice.JitConfig or None, got "
                        f"{type(jit_config).__name__}")
    if input_signature is not None:
        raise ValueError("data_sink: input_signature is not supported; sluice takes the "
                         "inputs' shapes from the dataset")
    if isinstance(fn, nn.Cell) and not isinstance(fn, nn.TrainOneStepCell) and \
            not nn._is_traced(fn):
        raise TypeError(f"data_sink: fn must be a TrainOneStepCell, a training Cell of your "
                        f"own or a train_step function, got the cell {type(fn).__name__}")
    if isinstance(fn, nn.Cell) or not callable(fn):
        model = _model_of(fn, "data_sink")
        model._check_dataset(dataset, "data_sink", True)
        model._ensure(dataset, "data_sink")
        return _SinkProcess(_sluice.DataSink(model._c, dataset._c, sink_size), model._claim)
    if not isinstance(dataset, Dataset):
        raise TypeError(f"data_sink: the dataset must be a sluice.dataset.Dataset, got "
                        f"{type(dataset).__name__}")
    mode = context.PYNATIVE_MODE if jit_config is None else context.GRAPH_MODE
    model_c, owned, optimizer = trace_step(fn, dataset, mode)
    return _SinkProcess(_sluice.DataSink(model_c, dataset._c, sink_size),
                        lambda: claim(model_c, owned, optimizer))
