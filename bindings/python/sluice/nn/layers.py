"""sluice.nn.layers: the layers a user's Cell is made of, as in
``mindspore.nn``: Conv2d, Dense, ReLU, MaxPool2d and Flatten. Each holds
its parameters (:class:`~sluice.nn.Parameter`, named ``weight`` and
``bias``, prefixed with the attribute it is assigned to) and, called inside
a traced step, records its C graph node. Arguments the C kernels cannot
honour (a conv bias, dilation, groups, "same" padding with a stride) raise
ValueError when the layer is made, naming the argument.
"""
import operator

from sluice.common.initializer import Initializer, initializer
from sluice.nn.cell import Cell, Parameter, _as_values, _sym

__all__ = ["Conv2d", "Dense", "ReLU", "MaxPool2d", "Flatten", "SequentialCell"]


def _int(value, what, low=1):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None
    if value < low:
        raise ValueError(f"{what} must be >= {low}, got {value}")
    return value


def _square(value, what):
    """An int, or a pair of equal ints (the C kernels are square)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or value[0] != value[1]:
            raise ValueError(f"{what}: sluice's kernels take one size for both sides, got "
                             f"{tuple(value)}")
        value = value[0]
    return _int(value, what)


def _param(name, shape, init, what):
    """A parameter from an initializer, a name, or the values themselves."""
    if isinstance(init, (Initializer, str)):
        return Parameter(name, shape, _init=initializer(init))
    if init is None:
        raise ValueError(f"{what}: give an initializer (sluice has no default {name} init "
                         "for None)")
    return Parameter(name, shape, _data=_as_values(name, shape, init))


class Conv2d(Cell):
    """2-D convolution over (N, C, H, W), as ``mindspore.nn.Conv2d``:
    weight (out_channels, in_channels, k, k), no bias.

    Args:
        in_channels, out_channels (int): channels.
        kernel_size (int or (k, k)): square kernels only.
        stride (int): default 1.
        pad_mode (str): "valid" (no padding), "pad" (``padding`` on every
            side) or "same" (stride 1 and an odd kernel: (k - 1) / 2).
            MindSpore's default, "same", is kept.
        padding (int): with pad_mode "pad".
        dilation, group: 1 only.
        has_bias (bool): False only (sluice's conv has no bias).
        weight_init: an initializer, a name or the values (default "normal").
        data_format: "NCHW" only.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros", data_format="NCHW"):
        super().__init__()
        self.in_channels = _int(in_channels, "Conv2d: in_channels")
        self.out_channels = _int(out_channels, "Conv2d: out_channels")
        self.kernel_size = _square(kernel_size, "Conv2d: kernel_size")
        self.stride = _square(stride, "Conv2d: stride")
        if _square(dilation, "Conv2d: dilation") != 1 or _int(group, "Conv2d: group") != 1:
            raise ValueError("Conv2d: sluice's conv has no dilation or groups: give dilation=1, "
                             "group=1")
        if has_bias:
            raise ValueError("Conv2d: has_bias=True is not supported (sluice's conv has no "
                             "bias); give has_bias=False")
        if data_format != "NCHW":
            raise ValueError(f"Conv2d: data_format {data_format!r}: sluice is NCHW only")
        padding = _int(padding, "Conv2d: padding", low=0)
        k = self.kernel_size
        if pad_mode == "valid":
            if padding:
                raise ValueError("Conv2d: pad_mode 'valid' takes padding=0 (use pad_mode='pad')")
            self.pad = 0
        elif pad_mode == "pad":
            self.pad = padding
        elif pad_mode == "same":
            if self.stride != 1 or k % 2 == 0 or padding:
                raise ValueError("Conv2d: sluice does pad_mode 'same' for stride 1 and an odd "
                                 "kernel only; use pad_mode 'valid' or 'pad'")
            self.pad = (k - 1) // 2
        else:
            raise ValueError(f"Conv2d: pad_mode {pad_mode!r}: give 'valid', 'pad' or 'same'")
        self.pad_mode = pad_mode
        self.has_bias = False
        self.weight = _param("weight", (self.out_channels, self.in_channels, k, k), weight_init,
                             "Conv2d")

    def construct(self, x):
        x = _sym(x, "Conv2d")
        t = x._trace
        return t.op(f"Conv2d({self.in_channels}, {self.out_channels}, {self.kernel_size})",
                    t.g.conv2d, x._node, t.param(self.weight), self.stride, self.pad)


class Dense(Cell):
    """A fully connected layer, as ``mindspore.nn.Dense``: (N, in) times
    weight (out, in), plus bias (out).

    Args:
        in_channels, out_channels (int): sizes.
        weight_init, bias_init: initializers, names or the values (default
            "normal" and "zeros").
        has_bias (bool): default True.
        activation: None, "relu" or an :class:`ReLU`.
    """

    def __init__(self, in_channels, out_channels, weight_init="normal", bias_init="zeros",
                 has_bias=True, activation=None):
        super().__init__()
        self.in_channels = _int(in_channels, "Dense: in_channels")
        self.out_channels = _int(out_channels, "Dense: out_channels")
        if activation is None or isinstance(activation, ReLU):
            self._relu = activation is not None
        elif activation == "relu":
            self._relu = True
        else:
            raise ValueError(f"Dense: activation {activation!r}: sluice has None and 'relu'")
        self.has_bias = bool(has_bias)
        self.weight = _param("weight", (self.out_channels, self.in_channels), weight_init,
                             "Dense")
        if self.has_bias:
            self.bias = _param("bias", (self.out_channels,), bias_init, "Dense")

    def construct(self, x):
        x = _sym(x, "Dense")
        t = x._trace
        what = f"Dense({self.in_channels}, {self.out_channels})"
        w = t.param(self.weight)
        b = t.param(self.bias) if self.has_bias else -1
        y = t.op(what, t.g.dense, x._node, w, b)
        return t.op(what + " activation", t.g.relu, y._node) if self._relu else y


class ReLU(Cell):
    """max(x, 0), elementwise."""

    def construct(self, x):
        x = _sym(x, "ReLU")
        return x._trace.op("ReLU", x._trace.g.relu, x._node)


class MaxPool2d(Cell):
    """Max over kernel_size x kernel_size windows, as
    ``mindspore.nn.MaxPool2d``; pad_mode "valid" and NCHW only."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", data_format="NCHW"):
        super().__init__()
        self.kernel_size = _square(kernel_size, "MaxPool2d: kernel_size")
        self.stride = _square(stride, "MaxPool2d: stride")
        if pad_mode.lower() != "valid":
            raise ValueError(f"MaxPool2d: pad_mode {pad_mode!r}: sluice pools 'valid' only")
        if data_format != "NCHW":
            raise ValueError(f"MaxPool2d: data_format {data_format!r}: sluice is NCHW only")

    def construct(self, x):
        x = _sym(x, "MaxPool2d")
        return x._trace.op(f"MaxPool2d({self.kernel_size}, {self.stride})",
                           x._trace.g.max_pool2d, x._node, self.kernel_size, self.stride)


class Flatten(Cell):
    """(N, ...) -> (N, the product of the rest)."""

    def construct(self, x):
        x = _sym(x, "Flatten")
        return x._trace.op("Flatten", x._trace.g.flatten, x._node)


class SequentialCell(Cell):
    """Cells called in order, each one's output the next one's input, as
    ``mindspore.nn.SequentialCell``: given as arguments, as a list, or as a
    dict (OrderedDict) of names to cells. Without names they are named
    ``0``, ``1``, ... (their parameters ``0.weight``, ``2.bias``, ...).
    Indexing and ``len()`` give the cells."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            named = [(str(name), cell) for name, cell in args[0].items()]
        else:
            cells = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
            named = [(str(i), cell) for i, cell in enumerate(cells)]
        for name, cell in named:
            if not isinstance(cell, Cell):
                raise TypeError(f"SequentialCell: item {name!r} is a {type(cell).__name__}, "
                                "not a Cell")
            setattr(self, name, cell)      # registered, its parameters prefixed by name
        self._sl_order = [cell for _, cell in named]

    def __getitem__(self, index):
        return self._sl_order[index]

    def __len__(self):
        return len(self._sl_order)

    def construct(self, x):
        for cell in self._sl_order:
            x = cell(x)
        return x
