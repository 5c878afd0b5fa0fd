"""sluice.nn: networks, the loss and the optimizers, as in ``mindspore.nn``.

These objects describe what to train; :class:`sluice.train.Model` compiles
them into a C model, which computes. The seeds' lines read unchanged::

    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)

Networks are the built-in :class:`LeNet5` (built whole by the C library) or
your own :class:`Cell` of :class:`Conv2d`, :class:`Dense`, :class:`ReLU`,
:class:`MaxPool2d` and :class:`Flatten` layers with a ``construct``, which
sluice traces into a C graph (see :mod:`sluice.nn.cell`). The loss is the
sparse mean softmax cross-entropy; the optimizers Momentum and SGD over
every parameter. Anything else is refused with ValueError (or TypeError,
AttributeError for a layer sluice does not have), naming it.

A network's parameters start from the seed of :func:`sluice.set_seed` at
the time the network is made (as MindSpore's initializers do). They are
one truth: once a :class:`~sluice.train.Model` is made with the network,
the values live in the model that last computed with them, and
:meth:`Parameter.asnumpy` reads them as training left them. Every other
Model over the network takes them before it computes (and a training
Model takes them back after each of its Python callbacks' hooks), so no
two Models hold divergent copies.
"""
import math
import operator

from sluice import _sluice
from sluice.context import get_seed
from sluice.nn.cell import Cell, Parameter, _as_values, _Grads, _sym
from sluice.nn.layers import Conv2d, Dense, Flatten, MaxPool2d, ReLU, SequentialCell

__all__ = ["Cell", "Parameter", "LeNet5", "SoftmaxCrossEntropyWithLogits", "CrossEntropyLoss",
           "Optimizer",
           "Momentum", "SGD", "WithLossCell", "TrainOneStepCell", "Conv2d", "Dense", "ReLU",
           "MaxPool2d", "Flatten", "SequentialCell", "wrap", "metrics", "Accuracy", "Loss"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"sluice.nn has no {name!r}: it has {', '.join(__all__)}")


def _positive(value, what):
    value = operator.index(value)
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return value


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

    def construct(self, x):
        raise TypeError("sluice.nn: the built-in LeNet5 is compiled whole by Model, "
                        "TrainOneStepCell and DatasetHelper and cannot be called inside a "
                        "traced function (value_and_grad, data_sink(train_step)); write it "
                        "as a Cell of sluice.nn layers there, as seed 001 does")

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
    """The loss: softmax cross-entropy of the logits (N, C), as MindSpore's.

    Args:
        sparse (bool): True: the labels are int32 class indices (N);
            False (the default): float32 (N, C), one-hot or any
            distribution.
        reduction (str): "mean": averaged over the batch, a scalar;
            "none" (the default, sparse=False only): each sample's loss,
            (N). A step trained with per-sample losses differentiates
            their sum (MindSpore's sens of ones); Model, data_sink and
            DatasetHelper take a scalar loss. "sum" and a sparse "none"
            are refused.

    Called inside a traced step, it records the loss.
    """

    def __init__(self, sparse=False, reduction="none"):
        super().__init__()
        if reduction not in ("mean", "none") or (sparse and reduction != "mean"):
            raise ValueError("SoftmaxCrossEntropyWithLogits: sluice computes the sparse mean "
                             "loss (sparse=True, reduction='mean') and, against dense labels "
                             "(sparse=False), the mean or per-sample one (reduction 'mean' or "
                             f"'none'); got sparse={sparse!r}, reduction={reduction!r}")
        self.sparse = bool(sparse)
        self.reduction = reduction

    def construct(self, logits, labels):
        logits = _sym(logits, "SoftmaxCrossEntropyWithLogits (logits)")
        labels = _sym(labels, "SoftmaxCrossEntropyWithLogits (labels)")
        t = logits._trace
        if self.sparse:
            return t.op("SoftmaxCrossEntropyWithLogits", t.g.softmax_cross_entropy,
                        logits._node, labels._node)
        loss = t.op("SoftmaxCrossEntropyWithLogits(sparse=False)",
                    t.g.softmax_cross_entropy_dense, logits._node, labels._node,
                    self.reduction == "mean")
        t.losses.add(loss._node)
        return loss


class CrossEntropyLoss(SoftmaxCrossEntropyWithLogits):
    """MindSpore 2's CrossEntropyLoss over logits (N, C): against class
    indices (int32 (N)) the sparse softmax cross-entropy, against class
    probabilities (float32 (N, C)) the dense one; the same graph as
    :class:`SoftmaxCrossEntropyWithLogits` with ``sparse`` chosen by the
    labels' type.

    Args:
        weight: None only (every class weighs the same).
        ignore_index (int): MindSpore's -100 by default; a label outside
            [0, C) is not ignored but fails the step, naming it.
        reduction (str): "mean" (the default), or "none" against class
            probabilities (a loss per sample). "sum" is refused.
        label_smoothing (float): 0.0 only.
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        if weight is not None:
            raise ValueError("CrossEntropyLoss: weight must be None: sluice weighs every class "
                             "alike")
        if label_smoothing != 0.0:
            raise ValueError("CrossEntropyLoss: label_smoothing must be 0.0: sluice's loss has "
                             "no smoothing (smooth the labels into class probabilities instead)")
        if reduction not in ("mean", "none"):
            raise ValueError(f"CrossEntropyLoss: reduction must be 'mean' or 'none' (against "
                             f"class probabilities), got {reduction!r}")
        super().__init__(sparse=reduction == "mean", reduction=reduction)
        self.ignore_index = operator.index(ignore_index)

    def construct(self, logits, labels):
        labels_sym = _sym(labels, "CrossEntropyLoss (labels)")
        self.sparse = labels_sym.dtype == "int32"
        if self.sparse and self.reduction != "mean":
            raise ValueError("CrossEntropyLoss: against class indices sluice computes the mean "
                             "loss (reduction='mean'); 'none' takes class probabilities")
        return super().construct(logits, labels)


def _is_traced(network):
    """True for a user's Cell with a construct (traced), False for LeNet5."""
    return isinstance(network, Cell) and not isinstance(network, LeNet5) and \
        type(network).construct is not Cell.construct


class Optimizer(Cell):
    """The base of the optimizers: the parameters they update (every
    trainable parameter of one network) and the learning rate.

    Inside a step traced by :func:`sluice.data_sink`, ``optimizer(grads)``
    with the gradients :func:`sluice.value_and_grad` returned appends the
    updates to the step (MindSpore's functional ``net_opt(grads)``)."""

    def __init__(self, learning_rate, parameters):
        super().__init__()
        params = list(parameters)
        name = type(self).__name__
        if not params or not all(isinstance(p, Parameter) for p in params):
            raise TypeError(f"{name}: give the network's parameters (network.trainable_params())")
        nets = {id(p._net) for p in params}
        net = params[0]._net
        if net is not None or len(nets) != 1:
            if len(nets) != 1:
                raise ValueError(f"{name}: the parameters come from several networks")
            if sorted(p.name for p in params) != sorted(p.name for p in net.trainable_params()):
                raise ValueError(f"{name}: sluice updates every parameter of the "
                                 "network: give all of network.trainable_params()")
        elif len({id(p) for p in params}) != len(params):
            raise ValueError(f"{name}: a parameter is given twice")
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{name}: learning_rate must be a number")
        if not (math.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"{name}: learning_rate must be > 0, got {learning_rate}")
        self._parameters = params
        self.learning_rate = float(learning_rate)
        self._net = net

    @property
    def parameters(self):
        """The parameters it updates, as given."""
        return self._parameters

    def __call__(self, grads):
        name = type(self).__name__
        eager = getattr(grads, "_eager", None)
        if eager is not None:          # the grads of value_and_grad on tensors, compiled
            from sluice.functional import _run_eager_step
            return _run_eager_step(*eager, self)
        if not isinstance(grads, _Grads):
            raise TypeError(f"{name}: call it with the gradients value_and_grad returned inside "
                            "the train_step given to sluice.data_sink (sluice applies "
                            f"optimizers in compiled steps only); got {type(grads).__name__}")
        trace = grads._trace
        if trace.optimizer is not None:
            raise ValueError(f"{name}: the step already applied an optimizer; apply one per step")
        mine, theirs = {id(p) for p in self._parameters}, {id(p) for p in grads._weights}
        if mine != theirs:
            raise ValueError(
                f"{name}: the gradients are of [{', '.join(p.name for p in grads._weights)}] but "
                f"this optimizer updates [{', '.join(p.name for p in self._parameters)}]: give "
                "it the grads of value_and_grad(fn, None, weights) over its own parameters")
        kind, lr, momentum = self._c_args()
        trace.g.optimizer(kind, lr, momentum)
        trace.optimizer = self
        if getattr(trace, "eager", None) is not None:   # value_and_grad on tensors: run it
            from sluice.functional import _run_eager_step
            return _run_eager_step(*trace.eager, self, trace)
        return True


class Momentum(Optimizer):
    """MindSpore's Momentum: ``accum = momentum * accum + grad; param -= lr *
    accum``, one accumulator per parameter, zero at first (and kept from one
    model of the same network to the next: a new data_sink continues them).

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
    """A network with its loss (``backbone``, ``loss_fn``), as MindSpore's:
    ``construct(data, label)`` is ``loss_fn(backbone(data), label)``. The
    backbone is a :class:`LeNet5` or your own Cell."""

    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)
        if not isinstance(backbone, LeNet5) and not _is_traced(backbone):
            raise TypeError("WithLossCell: the backbone must be a sluice.nn network (LeNet5, or "
                            "a Cell with a construct)")
        if not isinstance(loss_fn, SoftmaxCrossEntropyWithLogits):
            raise TypeError("WithLossCell: loss_fn must be SoftmaxCrossEntropyWithLogits")
        self.backbone = backbone
        self.loss_fn = loss_fn

    def construct(self, data, label):
        return self.loss_fn(self.backbone(data), label)


class TrainOneStepCell(Cell):
    """A network with its loss and optimizer: one training step, the
    ``fn`` of :func:`sluice.data_sink` and the network of
    :func:`sluice.train.connect_network_with_dataset`. Its C model is made
    when one of those first needs it.

    Called on tensors (``train_network(input, label)``, sluice.Tensor or
    numpy arrays), it runs one step on them now, as MindSpore's does: the
    step is traced and compiled for those dtypes and shapes the first time,
    and returns the loss (per sample with ``reduction='none'``).

    Args:
        network (WithLossCell): the network and its loss.
        optimizer (Optimizer): over the network's parameters.
    """

    def __init__(self, network, optimizer):
        super().__init__(auto_prefix=False)
        if not isinstance(network, WithLossCell):
            raise TypeError("TrainOneStepCell: network must be a WithLossCell(backbone, loss_fn)")
        if not isinstance(optimizer, Optimizer):
            raise TypeError("TrainOneStepCell: optimizer must be a sluice.nn optimizer")
        if isinstance(network.backbone, LeNet5):
            if optimizer._net is not network.backbone:
                raise ValueError("TrainOneStepCell: the optimizer's parameters are another "
                                 "network's")
        elif {id(p) for p in optimizer.parameters} != \
                {id(p) for p in network.backbone.trainable_params()}:
            raise ValueError("TrainOneStepCell: the optimizer must update exactly the "
                             "network's trainable_params()")
        self.network = network
        self.optimizer = optimizer
        self._model = None

    def construct(self, data, label):
        """One training step, traced: the loss of ``network(data, label)``,
        its gradients and the optimizer's updates; returns the loss. This
        is what calling the cell eagerly on data runs (see :class:`Cell`)."""
        from sluice.functional import GradOperation
        loss = self.network(data, label)
        grads = GradOperation(get_by_list=True)(self.network, self.optimizer.parameters)(
            data, label)
        self.optimizer(grads)
        return loss

    def _get_model(self):
        if self._model is None:
            from sluice.train import Model
            self._model = Model(self.network.backbone, self.network.loss_fn, self.optimizer)
        return self._model


from sluice.nn import wrap  # noqa: E402  (MindSpore's path of the two cells above)
from sluice.nn import metrics  # noqa: E402
from sluice.nn.metrics import Accuracy, Loss  # noqa: E402
