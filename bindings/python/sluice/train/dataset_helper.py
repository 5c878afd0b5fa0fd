"""sluice.train.dataset_helper: custom training loops and data_sink, as
``mindspore.train.dataset_helper`` and ``mindspore.data_sink``.

Both run a :class:`sluice.nn.TrainOneStepCell` on the device: the C
library's pipeline and transfer thread fill the device's queue and the
executor runs the steps, taking each batch with GetNext. sluice cannot
compile a Python function, so the step to run is always a
TrainOneStepCell (a network, its loss and optimizer)::

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
    if not isinstance(network, nn.TrainOneStepCell):
        raise TypeError(f"{what}: the network must be a sluice.nn.TrainOneStepCell"
                        "(WithLossCell(network, loss_fn), optimizer): sluice sinks compiled "
                        f"training steps, not Python functions (got {type(network).__name__})")
    return network._get_model()


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
        if self._c is not None:
            raise RuntimeError("DatasetHelper: already connected to a network")
        model._check_dataset(self.dataset, "DatasetHelper", True,
                             needs_end=self.dataset_sink_mode and self._sink_size == -1)
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
            status, loss = self._c.next()
            if status != 0:
                return
            yield (loss,)

    def close(self):
        """Stops the pipeline (and the transfer thread) and joins them."""
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
    """Connects a :class:`sluice.nn.TrainOneStepCell` to a
    :class:`DatasetHelper`: its C model is made (if it is not yet) and the
    helper's pipeline (and, in sink mode, transfer thread) starts. Returns
    the network to call with each item of the helper."""
    if not isinstance(dataset_helper, DatasetHelper):
        raise TypeError("connect_network_with_dataset: dataset_helper must be a DatasetHelper")
    dataset_helper._connect(_model_of(network, "connect_network_with_dataset"))
    return _ConnectedNetwork(network)


class _SinkProcess:
    """What :func:`data_sink` returns: each call runs sink_size steps and
    returns the last step's loss (a 0-d :class:`sluice.Tensor`)."""

    def __init__(self, c):
        self._c = c
        _live.add(self)

    def __call__(self):
        return self._c()

    def close(self):
        """Stops the pipeline and the transfer thread and joins them."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def data_sink(fn, dataset, sink_size=1):
    """MindSpore's data_sink: binds a training step to a dataset.

    Args:
        fn (TrainOneStepCell): the step (a network, its loss and optimizer).
        dataset (Dataset): rows with the network's ``image`` and ``label``.
        sink_size (int): steps each call runs on the device (default 1).

    Returns a callable; each call runs ``sink_size`` steps and returns the
    last one's loss. Calls continue the traversal where the previous one
    stopped, across epochs, so two calls of 50 steps train exactly as one
    of 100. The pipeline and the transfer thread start now and run until
    ``close()``. Ctrl-C during a call raises KeyboardInterrupt; the next
    call continues.
    """
    sink_size = _sink_size(sink_size, "data_sink", False)
    model = _model_of(fn, "data_sink")
    model._check_dataset(dataset, "data_sink", True)
    return _SinkProcess(_sluice.DataSink(model._c, dataset._c, sink_size))
