"""sluice.nn: networks, the loss and the optimizers, as in ``mindspore.nn``.

These objects describe what to train; :class:`sluice.train.Model` compiles
them into a C model, which computes. The seeds' lines read unchanged::

    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)

What sluice has is what its C library builds: the seeds' LeNet5, the sparse
mean softmax cross-entropy, Momentum and SGD over every parameter. Anything
else is refused with ValueError (or TypeError) when the object is made.

A network's parameters start from the seed of :func:`sluice.set_seed` at
the time the network is made (as MindSpore's initializers do). Once a
:class:`~sluice.train.Model` is made with the network, the values live in
that model: :meth:`Parameter.asnumpy` reads them as training left them. A
later Model made with the same network starts from those values and holds
them from then on.
"""
import math
import operator

from sluice import _sluice
from sluice.context import get_seed

__all__ = ["Cell", "Parameter", "LeNet5", "SoftmaxCrossEntropyWithLogits", "Optimizer",
           "Momentum", "SGD", "WithLossCell", "TrainOneStepCell"]


def _positive(value, what):
    value = operator.index(value)
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return value


class Parameter:
    """One trainable parameter: its ``name`` (``"conv1.weight"``), ``shape``
    and values (float32).

    A network's parameters (:meth:`LeNet5.trainable_params`) read and write
    the network's current values; those of :func:`sluice.load_checkpoint`
    hold the values read from the file.
    """

    __slots__ = ("name", "shape", "requires_grad", "_net", "_data")

    def __init__(self, name, shape, _net=None, _data=None):
        self.name = name
        self.shape = tuple(shape)
        self.requires_grad = True
        self._net = _net
        self._data = _data

    @property
    def dtype(self):
        """``"float32"``, the type of every parameter."""
        return "float32"

    def asnumpy(self):
        """The values as a new numpy array (a copy: training does not change it)."""
        if self._net is not None:
            return self._net._param_value(self.name)
        return self._data.copy()

    def set_data(self, data):
        """Replaces the values with ``data`` (an array of the parameter's shape)."""
        if self._net is not None:
            self._net._set_param_value(self.name, data)
        else:
            self._data = _as_values(self.name, self.shape, data)

    def __repr__(self):
        return f"Parameter(name={self.name!r}, shape={self.shape}, dtype=float32)"


def _as_values(name, shape, data):
    import numpy as np
    arr = np.array(data.asnumpy() if hasattr(data, "asnumpy") else data, dtype=np.float32)
    if arr.shape != tuple(shape):
        raise ValueError(f"parameter {name!r} has shape {tuple(shape)}, the value {arr.shape}")
    return arr


class Cell:
    """The base of sluice's networks: a description that a Model compiles."""

    def __init__(self):
        self.training = False

    def set_train(self, mode=True):
        """Records whether the cell is in training mode; returns the cell.
        sluice's networks have no layer (dropout, batch norm) that behaves
        differently when training, so this changes no number."""
        self.training = bool(mode)
        return self


class LeNet5(Cell):
    """The seeds' LeNet5: input float32 (batch_size, num_channel, 32, 32),
    conv 5x5 valid without bias (6, then 16 channels), ReLU, max-pool 2/2,
    dense 400-120-84-num_class, every parameter TruncatedNormal(0.02).

    Args:
        num_class (int): classes (default 10).
        num_channel (int): input channels (default 1).
        batch_size (int): the batch the steps are compiled for (default 32,
            the seeds' ``self.batch_size``); datasets must be batched so.

    The parameters start from the seed of :func:`sluice.set_seed` now.
    """

    def __init__(self, num_class=10, num_channel=1, batch_size=32):
        super().__init__()
        self.num_class = _positive(num_class, "LeNet5: num_class")
        self.num_channel = _positive(num_channel, "LeNet5: num_channel")
        self.batch_size = _positive(batch_size, "LeNet5: batch_size")
        self._seed = get_seed()
        self._owner = None     # the _sluice.Model holding the values
        self._pending = {}     # name -> values set before any Model
        self._initial = None   # [(name, shape, Tensor)] with the seed

    def _params(self):
        if self._initial is None:
            self._initial = _sluice.network_params("lenet", self.num_class, self.num_channel,
                                                   self._seed)
        return self._initial

    def trainable_params(self):
        """The parameters, in the order the network makes them
        (``conv1.weight``, ``conv2.weight``, ``fc1.weight``, ``fc1.bias``, ...)."""
        return [Parameter(name, shape, _net=self) for name, shape, _ in self._params()]

    def parameters_dict(self):
        """``{name: Parameter}`` of :meth:`trainable_params`."""
        return {p.name: p for p in self.trainable_params()}

    def _shape(self, name):
        for pname, shape, _ in self._params():
            if pname == name:
                return shape
        raise KeyError(f"LeNet5 has no parameter {name!r}")

    def _param_value(self, name):
        import numpy as np
        if self._owner is not None:
            return np.asarray(self._owner.get_param(name))
        if name in self._pending:
            return self._pending[name].copy()
        for pname, _, values in self._params():
            if pname == name:
                return np.array(values)
        raise KeyError(f"LeNet5 has no parameter {name!r}")

    def _set_param_value(self, name, data):
        values = _as_values(name, self._shape(name), data)
        if self._owner is not None:
            self._owner.set_param(name, values)
        else:
            self._pending[name] = values

    def _adopt(self, model_c):
        """Makes model_c (a new _sluice.Model of this network) hold the
        values: the previous model's, or those set before any model."""
        if self._owner is not None:
            for name, _, _ in self._params():
                model_c.set_param(name, self._owner.get_param(name))
        else:
            for name, values in self._pending.items():
                model_c.set_param(name, values)
            self._pending = {}
        self._owner = model_c


class SoftmaxCrossEntropyWithLogits(Cell):
    """The loss: softmax cross-entropy of the logits against integer labels
    (``sparse=True``), averaged over the batch (``reduction="mean"``), which
    is what sluice computes. MindSpore's defaults (``sparse=False``,
    ``reduction="none"``) are refused: give the seeds' arguments."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__()
        if not sparse or reduction != "mean":
            raise ValueError("SoftmaxCrossEntropyWithLogits: sluice computes the sparse, mean "
                             "loss: give sparse=True, reduction='mean' (got "
                             f"sparse={sparse!r}, reduction={reduction!r})")
        self.sparse = True
        self.reduction = "mean"


class Optimizer(Cell):
    """The base of the optimizers: the parameters they update (every
    trainable parameter of one network) and the learning rate."""

    def __init__(self, learning_rate, parameters):
        super().__init__()
        params = list(parameters)
        if not params or not all(isinstance(p, Parameter) and p._net is not None
                                 for p in params):
            raise TypeError(f"{type(self).__name__}: give the network's parameters "
                            "(network.trainable_params())")
        nets = {id(p._net) for p in params}
        if len(nets) != 1:
            raise ValueError(f"{type(self).__name__}: the parameters come from several networks")
        net = params[0]._net
        if sorted(p.name for p in params) != sorted(p.name for p in net.trainable_params()):
            raise ValueError(f"{type(self).__name__}: sluice updates every parameter of the "
                             "network: give all of network.trainable_params()")
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number")
        if not (math.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"{type(self).__name__}: learning_rate must be > 0, "
                             f"got {learning_rate}")
        self.parameters = params
        self.learning_rate = float(learning_rate)
        self._net = net


class Momentum(Optimizer):
    """MindSpore's Momentum: ``accum = momentum * accum + grad; param -= lr *
    accum``, one accumulator per parameter, zero at first.

    Args:
        params: ``network.trainable_params()`` (all of them).
        learning_rate (float): > 0.
        momentum (float): in [0, 1).
    """

    def __init__(self, params, learning_rate, momentum):
        super().__init__(learning_rate, params)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or \
                not 0 <= momentum < 1:
            raise ValueError(f"Momentum: momentum must be in [0, 1), got {momentum!r}")
        self.momentum = float(momentum)

    def _c_args(self):
        return "momentum", self.learning_rate, self.momentum


class SGD(Optimizer):
    """Plain gradient descent: ``param -= lr * grad``.

    Args:
        params: ``network.trainable_params()`` (all of them).
        learning_rate (float): > 0 (default 0.1, as MindSpore's).
    """

    def __init__(self, params, learning_rate=0.1):
        super().__init__(learning_rate, params)

    def _c_args(self):
        return "sgd", self.learning_rate, 0.0


class WithLossCell(Cell):
    """A network with its loss (``backbone``, ``loss_fn``), as MindSpore's."""

    def __init__(self, backbone, loss_fn):
        super().__init__()
        if not isinstance(backbone, LeNet5):
            raise TypeError("WithLossCell: the backbone must be a sluice.nn network (LeNet5)")
        if not isinstance(loss_fn, SoftmaxCrossEntropyWithLogits):
            raise TypeError("WithLossCell: loss_fn must be SoftmaxCrossEntropyWithLogits")
        self.backbone = backbone
        self.loss_fn = loss_fn


class TrainOneStepCell(Cell):
    """A network with its loss and optimizer: one training step, the
    ``fn`` of :func:`sluice.data_sink` and the network of
    :func:`sluice.train.connect_network_with_dataset`. Its C model is made
    when one of those first needs it.

    Args:
        network (WithLossCell): the network and its loss.
        optimizer (Optimizer): over the network's parameters.
    """

    def __init__(self, network, optimizer):
        super().__init__()
        if not isinstance(network, WithLossCell):
            raise TypeError("TrainOneStepCell: network must be a WithLossCell(backbone, loss_fn)")
        if not isinstance(optimizer, Optimizer):
            raise TypeError("TrainOneStepCell: optimizer must be a sluice.nn optimizer")
        if optimizer._net is not network.backbone:
            raise ValueError("TrainOneStepCell: the optimizer's parameters are another network's")
        self.network = network
        self.optimizer = optimizer
        self._model = None

    def _get_model(self):
        if self._model is None:
            from sluice.train import Model
            self._model = Model(self.network.backbone, self.network.loss_fn, self.optimizer)
        return self._model
