"""sluice.nn.cell: Cell, Parameter and the tracing that turns a Cell's
``construct`` into a C graph.

sluice does not run networks from Python: it compiles them. A Cell written
as in MindSpore (layers made in ``__init__``, used in ``construct``) is
*traced*: ``construct`` runs once on symbolic tensors, and every layer or
op it calls records its node in a C graph (``sluice._sluice.Graph``)
instead of computing. That graph, with the loss, its backward and the
optimizer's updates, is what a :class:`sluice.train.Model`,
:func:`sluice.data_sink` or a DatasetHelper compiles and runs.

What a construct may call is what the C graph has: the layers of
:mod:`sluice.nn` (Conv2d, Dense, ReLU, MaxPool2d, Flatten, the loss),
:mod:`sluice.ops` (reshape, flatten, relu, mean) and ``+`` of two tensors of one
shape. Anything else (another tensor method, numpy or torch on a traced
tensor, Python branching on a tensor's value) raises an error naming it:
sluice never trains something other than what was written. A training
Cell (seed 004's own TrainOneStepCell) also calls ops.GradOperation, an
optimizer on its grads, ops.Fill, ops.DType, ops.Shape and ops.depend.

A cell called on data (sluice.Tensor or numpy arrays) instead of traced
tensors runs on them now: a training cell one training step, a network
its forward pass on the current weights (``net(x)``, inference). It is
traced for their shapes and compiled once (``_eager_step``).
"""
import numpy as np

from sluice import _sluice
from sluice.context import get_seed

__all__ = ["Cell", "Parameter"]

#: What a construct may use; error messages name it.
SUPPORTED = ("nn.Conv2d, nn.Dense, nn.ReLU, nn.MaxPool2d, nn.Flatten, "
             "nn.SoftmaxCrossEntropyWithLogits, ops.reshape / ops.Reshape, "
             "ops.flatten / ops.Flatten, ops.relu / ops.ReLU, ops.mean / ops.ReduceMean "
             "(over trailing axes), and + of two tensors")


def _as_values(name, shape, data):
    arr = np.array(data.asnumpy() if hasattr(data, "asnumpy") else data, dtype=np.float32)
    if arr.shape != tuple(shape):
        raise ValueError(f"parameter {name!r} has shape {tuple(shape)}, the value {arr.shape}")
    return arr


class Parameter:
    """One trainable parameter: its ``name`` (``"conv1.weight"``), ``shape``
    and values (float32).

    A built-in network's parameters (:meth:`LeNet5.trainable_params`) read
    and write the network's current values. A layer's (``Conv2d.weight``)
    start from its initializer when first needed; once a model has been
    made from the network (by :class:`sluice.train.Model` or
    :func:`sluice.data_sink`), they read and write that model's values.
    Those of :func:`sluice.load_checkpoint` hold the values read from the
    file.
    """

    __slots__ = ("name", "shape", "requires_grad", "_net", "_data", "_init", "_owner",
                 "_cname", "_root")

    def __init__(self, name, shape, _net=None, _data=None, _init=None):
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.requires_grad = True
        self._net = _net      # a built-in network holding the values
        self._data = _data    # numpy values, before any model holds them
        self._init = _init    # an Initializer, while there are no values
        self._owner = None    # the _sluice.Model holding the values...
        self._cname = None    # ...under this name
        self._root = None     # the Cell whose trainable_params() made the values

    @property
    def dtype(self):
        """``"float32"``, the type of every parameter."""
        return "float32"

    def asnumpy(self):
        """The values as a new numpy array (a copy: training does not change it)."""
        if self._net is not None:
            return self._net._param_value(self.name)
        if self._owner is not None:
            return np.array(self._owner.get_param(self._cname))
        if self._data is None:
            _make_values(self._root.trainable_params() if self._root is not None else [self],
                         self._root._seed if self._root is not None else get_seed())
            if self._data is None:
                raise ValueError(f"parameter {self.name!r} has neither values nor an "
                                 "initializer")
        return self._data.copy()

    def set_data(self, data):
        """Replaces the values with ``data`` (an array of the parameter's shape)."""
        if self._net is not None:
            self._net._set_param_value(self.name, data)
            return
        values = _as_values(self.name, self.shape, data)
        if self._owner is not None:
            self._owner.set_param(self._cname, values)
        else:
            self._data = values

    def __repr__(self):
        return f"Parameter(name={self.name!r}, shape={self.shape}, dtype=float32)"


def _make_values(params, seed):
    """Gives the parameters without values theirs: position i of params is
    initialised as a C graph's i-th parameter with this seed (as a built-in
    network's are), Normal ones by numpy seeded by (seed, i)."""
    g = _sluice.Graph(seed=seed)
    made = []
    for i, p in enumerate(params):
        init = p._init
        if p._data is not None or p._owner is not None or p._net is not None or init is None:
            g.param(f"p{i}", p.shape, "zeros")   # keeps the positions
            continue
        if init.kind == "normal":
            g.param(f"p{i}", p.shape, "zeros")
            rng = np.random.default_rng([seed, i])
            p._data = rng.normal(init.mean, init.sigma, p.shape).astype(np.float32)
            continue
        made.append((p, g.param(f"p{i}", p.shape, init.kind, init.sigma)))
    for p, node in made:
        p._data = np.array(g.get_param(node))


class Cell:
    """The base of networks, as ``mindspore.nn.Cell``: sub-cells and
    parameters assigned as attributes are registered in order, and the
    parameters of a sub-cell assigned as ``conv1`` are named
    ``conv1.<name>`` (unless the cell is made with ``auto_prefix=False``).
    A subclass defines ``construct``; calling the cell inside a traced step
    records it (see the module's help).

    The network's parameters start from the seed of :func:`sluice.set_seed`
    at the time the cell is made.
    """

    def __init__(self, auto_prefix=True, flags=None):
        d = self.__dict__
        d["_sl_cells"] = {}
        d["_sl_params"] = {}
        d["_sl_auto_prefix"] = bool(auto_prefix)
        d["training"] = False
        d["_seed"] = get_seed()

    def __setattr__(self, name, value):
        d = self.__dict__
        registry = not name.startswith("_")
        if registry and "_sl_cells" not in d and isinstance(value, (Cell, Parameter)):
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                               f"assigning {name!r}")
        if registry and "_sl_cells" in d:
            d["_sl_cells"].pop(name, None)
            d["_sl_params"].pop(name, None)
            if isinstance(value, Cell):
                d["_sl_cells"][name] = value
                if d["_sl_auto_prefix"]:
                    for p in value._collect():
                        p.name = f"{name}.{p.name}"
            elif isinstance(value, Parameter):
                d["_sl_params"][name] = value
        object.__setattr__(self, name, value)

    def set_train(self, mode=True):
        """Records whether the cell is in training mode; returns the cell.
        sluice's layers have none (dropout, batch norm) that behaves
        differently when training, so this changes no number."""
        self.training = bool(mode)
        for cell in self._sl_cells.values():
            cell.set_train(mode)
        return self

    def _collect(self):
        out, seen = [], set()
        stack = [self]
        while stack:
            cell = stack.pop(0)
            for p in cell.__dict__.get("_sl_params", {}).values():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
            stack[:0] = list(cell.__dict__.get("_sl_cells", {}).values())
        return out

    def trainable_params(self, recurse=True):
        """The parameters, in the order the layers were assigned
        (``conv1.weight``, ``conv2.weight``, ``fc1.weight``, ``fc1.bias``, ...)."""
        params = [p for p in self._collect() if p.requires_grad]
        for p in params:
            if p._root is None:
                p._root = self
        return params

    def get_parameters(self, expand=True):
        """An iterator over :meth:`trainable_params` (MindSpore's name)."""
        return iter(self.trainable_params())

    def parameters_dict(self, recurse=True):
        """``{name: Parameter}`` of :meth:`trainable_params`."""
        return {p.name: p for p in self.trainable_params()}

    def cells_and_names(self):
        """(name, cell) of the direct sub-cells, in assignment order."""
        return list(self._sl_cells.items())

    def construct(self, *inputs):
        """What the cell computes; subclasses define it."""
        raise NotImplementedError(f"sluice.nn: {type(self).__name__} has no construct()")

    def __call__(self, *args, **kwargs):
        trace = _trace_of(args)
        if trace is None:
            if not kwargs and args and all(_is_data(a) for a in args):
                return _eager_step(self, args)
            raise RuntimeError(
                f"sluice.nn: {type(self).__name__} was called on {_kinds(args, kwargs)} outside "
                "a traced step. Outside one a cell runs on data given positionally as "
                "sluice.Tensor or numpy arrays (net(x): a forward pass on the current "
                "weights; a TrainOneStepCell's call: one training step); inside, "
                "sluice.train.Model, sluice.data_sink(train_step, dataset) and a "
                "DatasetHelper call it on symbolic tensors")
        if type(self).construct is Cell.construct:
            raise NotImplementedError(f"sluice.nn: {type(self).__name__} has no construct() "
                                      "to trace")
        if trace.depth == 0:
            self.trainable_params()   # the outermost cell names the values' positions
        key = None
        if not kwargs and all(isinstance(a, _Sym) for a in args):
            key = (id(self), tuple(a._node for a in args))
        trace.depth += 1
        trace.scopes.append(trace.scope_of(self))
        try:
            out = self.construct(*args, **kwargs)
        finally:
            trace.scopes.pop()
            trace.depth -= 1
        if key is not None:
            trace.calls[key] = (self, out)
        return out


def _is_data(x):
    return isinstance(x, (_sluice.Tensor, np.ndarray))


def _kinds(args, kwargs):
    names = sorted({type(a).__name__ for a in list(args) + list(kwargs.values())})
    return ", ".join(names) if names else "nothing"


def _eager_step(cell, args):
    """cell(*args) on data (sluice.Tensor or numpy arrays), run now on the
    CPU executor: a training cell's one step (returns the loss), or a
    network's forward pass on its current weights (returns what construct
    returns, as sluice.Tensors), compiled for the arguments' dtypes and
    shapes the first time they are seen (then kept on the cell), as
    MindSpore's jit compiles on the first call per shape."""
    from sluice import context
    from sluice.train.tracing import claim, trace_fn
    from sluice.nn import LeNet5
    if isinstance(cell, LeNet5):
        raise TypeError("sluice.nn: the built-in LeNet5 runs compiled whole inside a Model and "
                        "cannot be called on tensors: evaluate it with "
                        "sluice.train.Model(net, metrics={'accuracy'}).eval(dataset), or write "
                        "it as a Cell of sluice.nn layers (seed 001's LeNet5), which runs on "
                        "tensors")
    arrays = [np.asarray(a.asnumpy() if isinstance(a, _sluice.Tensor) else a) for a in args]
    specs = tuple((a.dtype.name, a.shape) for a in arrays)
    cache = cell.__dict__.setdefault("_sl_eager", {})
    entry = cache.get(specs)
    what = f"{type(cell).__name__} called on tensors"
    if entry is None:
        import inspect
        try:
            names = list(inspect.signature(cell.construct).bind(*args).arguments)
        except TypeError as e:
            raise TypeError(f"sluice.nn: {what}: {e}") from None
        bad = [f"{n} {d}" for n, (d, _) in zip(names, specs) if d not in ("float32", "int32")]
        if bad:
            raise TypeError(f"sluice.nn: {what}: inputs must be float32 or int32, got "
                            f"{', '.join(bad)}")
        not_a_step = (f"sluice.nn: {type(cell).__name__} was called on data: it computes "
                      "gradients but is not a whole training step (the loss, its gradients "
                      "and an optimizer applied to them, returning the loss); a forward "
                      "network's call, or a TrainOneStepCell's, runs on tensors")
        t, _ = trace_fn(cell, [(n, d, shape) for n, (d, shape) in zip(names, specs)],
                        f"sluice.nn: {what}", not_a_step, forward_ok=True)
        mode = context.get_context("mode")
        if t.outputs is not None:      # a forward pass: its outputs, no updates
            step = t.g.make_step([o._node for o in t.outputs], train=False, mode=mode)
            single = not t.outputs_tuple
        else:
            step = t.g.make_step([t.loss], train=True, mode=mode)
            single = True
        owned = [(p, p.name) for p, _ in t.params.values()]
        entry = cache[specs] = (step, owned, t.optimizer, single)
    step, owned, optimizer, single = entry
    claim(step, owned, optimizer)   # the parameters' current values, wherever they are
    outs = step.run(arrays)
    return outs[0] if single else tuple(outs)


# --- tracing ---------------------------------------------------------------------------

class _Trace:
    """One C graph being built by running Python code on symbolic tensors;
    it also records what value_and_grad and the optimizer added."""

    def __init__(self, seed=0):
        self.g = _sluice.Graph(seed=seed)
        self.params = {}        # id(Parameter) -> (Parameter, node)
        self.depth = 0          # cells being called
        self.loss = None        # the node backward() was run on
        self.grads = None       # the _Grads value_and_grad returned
        self.optimizer = None   # the optimizer that appended its updates
        # (id(cell), input nodes) -> (cell, output) of each cell called on
        # traced tensors only: GradOperation's grad(network, weights)(*inputs)
        # reuses the forward construct already traced instead of a second copy
        self.calls = {}
        self.losses = set()     # per-sample loss nodes (reduction "none")
        # (cell, path) of the cells being called, outermost first: a node
        # is named after the layer that made it ("conv1", "fc2"), as its
        # parameters are ("conv1.weight"), so that save_graphs dumps and
        # reports read like the network's code
        self.scopes = []
        self.names = set()      # node names given so far

    def input(self, name, dtype, shape):
        return _Sym(self, self.g.input(name, dtype, shape))

    def param(self, p):
        """The node of parameter p, made with its current values."""
        entry = self.params.get(id(p))
        if entry is not None:
            return entry[1]
        if self.loss is not None:
            raise ValueError(f"sluice.nn: parameter {p.name!r} was first used after "
                             "value_and_grad's backward; use every layer inside the "
                             "function given to value_and_grad")
        if any(q.name == p.name for q, _ in self.params.values()):
            raise ValueError(f"sluice.nn: two parameters are named {p.name!r}: assign the "
                             "layers to attributes of distinct names in one Cell")
        values = p.asnumpy()
        node = self.g.param(p.name, p.shape, "zeros")
        self.g.set_param(node, values)
        self.params[id(p)] = (p, node)
        return node

    def scope_of(self, cell):
        """(cell, path): the attribute path from the outermost cell (""
        for that one), through the cell calling it; a parent made with
        auto_prefix=False adds nothing, as it adds nothing to its
        parameters' names."""
        if not self.scopes:
            return (cell, "")
        parent, path = self.scopes[-1]
        if not parent.__dict__.get("_sl_auto_prefix", True):
            return (cell, path)   # as its parameters' names, no prefix from this parent
        for name, sub in parent.__dict__.get("_sl_cells", {}).items():
            if sub is cell:
                return (cell, f"{path}.{name}" if path else name)
        return (cell, path)   # a cell held elsewhere: its ops count as the caller's

    def node_name(self):
        """A name for the next node: the innermost layer's path, made
        unique by a suffix when the layer runs more than once (a ReLU cell
        used after every layer); None (the op's own name and a number) for
        ops outside any layer."""
        path = self.scopes[-1][1] if self.scopes else ""
        if not path:
            return None
        name, k = path, 1
        while name in self.names:
            k += 1
            name = f"{path}_{k}"
        self.names.add(name)
        return name

    def op(self, what, fn, *args):
        """Runs a graph builder; its ValueError (shapes) names the layer."""
        name = self.node_name()
        for _ in range(100):
            try:
                return _Sym(self, fn(name, *args))
            except ValueError as e:
                # a layer path can meet a name the graph made itself (an
                # op's own name and number): take the layer's next suffix
                if name is None or "already exists" not in str(e):
                    raise ValueError(f"sluice.nn: {what}: {e}") from None
                name = self.node_name()
        raise ValueError(f"sluice.nn: {what}: no free name for a node of {name!r}")


def _trace_of(args):
    for a in args:
        if isinstance(a, _Sym):
            return a._trace
    return None


def _sym(x, what):
    """x as a traced tensor, or TypeError naming what was given."""
    if not isinstance(x, _Sym):
        raise TypeError(f"sluice.nn: {what} was given a {type(x).__name__}, not a traced "
                        "tensor: inside construct, only the inputs and what layers and "
                        "sluice.ops return can be used")
    return x


def _unsupported(what):
    def method(self, *args, **kwargs):
        raise TypeError(f"sluice.nn: construct() used {what} on a tensor, which sluice "
                        f"cannot trace; supported: {SUPPORTED}")
    return method


class _Sym:
    """A symbolic tensor: a node of the graph being traced, with its shape
    and dtype, and no values."""

    __slots__ = ("_trace", "_node")

    def __init__(self, trace, node):
        self._trace = trace
        self._node = node

    @property
    def shape(self):
        return self._trace.g.spec(self._node)[1]

    @property
    def dtype(self):
        return self._trace.g.spec(self._node)[0]

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<traced tensor {self.dtype} {self.shape}>"

    def __add__(self, other):
        if not isinstance(other, _Sym) or other._trace is not self._trace:
            raise TypeError(f"sluice.nn: construct() added a {type(other).__name__} to a "
                            "tensor; sluice adds two traced tensors of one shape only")
        return self._trace.op("+", self._trace.g.add, self._node, other._node)

    __radd__ = __add__
    __sub__ = __rsub__ = _unsupported("-")
    __mul__ = __rmul__ = _unsupported("*")
    __truediv__ = __rtruediv__ = _unsupported("/")
    __matmul__ = __rmatmul__ = _unsupported("@")
    __pow__ = _unsupported("**")
    __neg__ = _unsupported("unary -")
    __getitem__ = _unsupported("indexing")
    __iter__ = _unsupported("iteration")
    __len__ = _unsupported("len()")
    __float__ = _unsupported("float()")
    __int__ = _unsupported("int()")

    def __bool__(self):
        raise TypeError("sluice.nn: construct() branched on a tensor's value; sluice traces "
                        "construct once, without values, so its control flow must not "
                        "depend on them")

    def __array__(self, *args, **kwargs):
        raise TypeError("sluice.nn: construct() turned a traced tensor into an array (a numpy "
                        "or torch op, or np.asarray); sluice cannot trace those; supported: "
                        f"{SUPPORTED}")

    def __getattr__(self, name):
        raise AttributeError(f"sluice.nn: construct() called tensor op {name!r}, which sluice "
                             f"cannot trace; supported: {SUPPORTED}")


class _Grads(tuple):
    """The gradients value_and_grad returns inside a traced step: one
    traced tensor per weight, in the weights' order; an optimizer applies
    them (``net_opt(grads)``)."""

    def __new__(cls, trace, weights, nodes):
        self = super().__new__(cls, (_Sym(trace, n) for n in nodes))
        self._trace = trace
        self._weights = tuple(weights)
        return self
