"""sluice.train.tracing: a user's network, a plain Python train_step, or a
training Cell of the user's own (seed 004's TrainOneStepCell), traced into
one C graph (forward, loss, backward, optimizer updates) and
compiled into a C model (``sluice._sluice.Graph.make_model``), which the
C library's train, data_sink and dataset-helper paths run like a built-in
network's.

The graph's inputs are the dataset's columns, of the shapes and types of
its batches; a step is compiled for those shapes, so the dataset's batch
shape must be fixed (``batch(..., drop_remainder=True)``).

Parameters belong to the network, not to a model: the model made last (or
the one about to run, see :func:`claim`) holds their values, and a new
model starts from them. The optimizer's accumulators move along the same
way, so a second data_sink over the same network and optimizer continues
the training as MindSpore's would.
"""
import inspect

from sluice import context
from sluice.dataset import Dataset
from sluice.nn.cell import Cell, _Sym, _Trace

__all__ = ["trace_network", "trace_fn", "trace_step", "claim", "claim_moments", "check_epoch", "TracedStep"]


def check_epoch(dataset, what, needs_end=False):
    """TypeError or ValueError unless dataset is a Dataset whose epoch holds
    a batch and, when needs_end, ends."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{what}: the dataset must be a sluice.dataset.Dataset, "
                        f"got {type(dataset).__name__}")
    size = dataset.get_dataset_size()
    if size == 0:
        raise ValueError(f"{what}: an epoch of the dataset holds no batch (fewer samples "
                         "than the batch size, with drop_remainder?)")
    if size < 0 and needs_end:
        raise ValueError(f"{what}: the dataset has no end (repeat without a count), so an "
                         "epoch never ends" + (": give sink_size > 0" if what != "eval" else ""))


def _input_specs(dataset, what, short_last_batch=False):
    """[(name, dtype, shape)] of the dataset's columns, all fixed. With
    short_last_batch (evaluation, which pads a last short batch), a batch
    size known only with data is the dataset's batch_size."""
    specs = list(zip(dataset.get_col_names(), dataset.output_types(), dataset.output_shapes()))
    if short_last_batch:
        specs = [(name, dtype, [dataset.get_batch_size()] + shape[1:]
                  if shape and shape[0] < 0 else shape) for name, dtype, shape in specs]
    for name, _, shape in specs:
        if any(d < 0 for d in shape):
            raise ValueError(f"{what}: the dataset's column {name!r} has shape {list(shape)}, "
                             "which is not fixed: sluice compiles the step for one shape "
                             "(batch with drop_remainder=True)")
    return specs


def _check_loss(loss, what):
    if not isinstance(loss, _Sym):
        raise TypeError(f"{what}: the loss is a {type(loss).__name__}, not a traced tensor")
    if loss.shape != ():
        raise ValueError(f"{what}: the loss must be a scalar, got a tensor of shape "
                         f"{loss.shape} (use SoftmaxCrossEntropyWithLogits(sparse=True, "
                         "reduction='mean'))")


def _make_model(trace, inputs, logits, loss, mode):
    """The C model of a finished trace; it holds the parameters' values."""
    image = inputs["image"]._node if "image" in inputs else -1
    label = inputs["label"]._node if "label" in inputs else -1
    if trace.g.spec(loss)[1] != ():
        raise ValueError("sluice: the step's loss is per sample, of shape "
                         f"{tuple(trace.g.spec(loss)[1])}; Model, data_sink and DatasetHelper "
                         "train with a scalar loss (reduction='mean'); a per-sample loss "
                         "trains by calling the TrainOneStepCell on tensors")
    if image < 0 or label < 0 or inputs["label"].dtype != "int32":
        logits = -1          # eval counts int32 class labels only
    owned = [(p, p.name) for p, _ in trace.params.values()]
    model_c = trace.g.make_model(
        image, label, logits, loss, mode=mode,
        device_target=context.get_context("device_target"),
        device_id=context.get_context("device_id"),
        save_graphs=context.get_context("save_graphs"),
        save_graphs_path=context.get_context("save_graphs_path"))
    claim(model_c, owned, trace.optimizer)
    return model_c, owned


def claim(model_c, owned, optimizer):
    """Makes model_c hold the values of its parameters (owned: [(Parameter,
    name in model_c)]) and of the optimizer's accumulators, copying them
    from wherever they are now (another model, or values not yet in any)."""
    for p, name in owned:
        if p._owner is not model_c:
            model_c.set_param(name, p.asnumpy())
            p._owner, p._cname, p._data = model_c, name, None
    claim_moments(model_c, optimizer, {id(p): name for p, name in owned})


def claim_moments(model_c, optimizer, names):
    """Makes model_c hold the optimizer's accumulators (``moments.<name>``
    for names {key: name in model_c}, the key naming one parameter across
    models), copied from the model that held them last. An optimizer that
    keeps none (SGD) only records the holder."""
    held = getattr(optimizer, "_held", None)
    if optimizer is None or (held is not None and held[0] is model_c):
        return
    if held is not None and optimizer._c_args()[0] == "momentum":
        prev, prev_names = held
        for key, name in names.items():
            if key in prev_names:
                model_c.set_state("moments." + name,
                                  prev.get_state("moments." + prev_names[key]))
    optimizer._held = (model_c, dict(names))


def feed_columns(names, what):
    """The dataset columns that feed a Model's network its image and label:
    those named ``image`` and ``label``, or else, as MindSpore feeds a
    network its dataset's columns in order, a dataset's two columns."""
    names = list(names)
    if "image" in names and "label" in names:
        return "image", "label"
    # in order only when neither name is there, lest "label" feed the image
    if len(names) == 2 and "image" not in names and "label" not in names:
        return names[0], names[1]
    raise ValueError(f"{what}: the network reads 'image' and 'label'; the dataset's columns "
                     f"are {names}: give it columns of those names, or exactly 2 columns, which "
                     "feed the network in order")


def trace_network(network, loss_fn, optimizer, dataset, what):
    """Model's compilation of a user's Cell: the dataset's image and label
    columns in (feed_columns), ``loss_fn(network(image), label)``, backward
    and the optimizer. The step's inputs take the columns' names. Without
    an optimizer (a Model that evaluates only) the updates are plain SGD's,
    which never run; without a loss_fn the step's loss is the sparse mean
    one, which evaluation computes anyway. Compiled for evaluation (what is "eval"), a last short
    batch is padded to the dataset's batch size. Returns (model_c, owned)."""
    specs = {name: (dtype, shape)
             for name, dtype, shape in _input_specs(dataset, what, what == "eval")}
    t = _Trace(seed=network._seed)
    image_col, label_col = feed_columns(specs, what)
    if loss_fn is None:
        from sluice.nn import SoftmaxCrossEntropyWithLogits
        if specs[label_col][0] != "int32":
            raise ValueError(f"{what}: the dataset's labels ({label_col!r}) are "
                             f"{specs[label_col][0]}; accuracy counts int32 class indices "
                             f"(map transforms.TypeCast(sluice.int32) on {label_col!r})")
        loss_fn = SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    inputs = {"image": t.input(image_col, *specs[image_col]),
              "label": t.input(label_col, *specs[label_col])}
    logits = network(inputs["image"])
    if not isinstance(logits, _Sym):
        raise TypeError(f"{what}: {type(network).__name__}.construct returned a "
                        f"{type(logits).__name__}, not a traced tensor")
    loss = loss_fn(logits, inputs["label"])
    _check_loss(loss, what)
    t.loss = loss._node
    if optimizer is not None:
        used = {id(p) for p, _ in t.params.values()}
        params = network.trainable_params()
        unused = [p.name for p in params if id(p) not in used]
        if unused:
            raise ValueError(f"{what}: construct() does not use the parameters {unused}; "
                             "sluice updates every parameter of the network")
        if {id(p) for p in optimizer.parameters} != {id(p) for p in params}:
            raise ValueError(f"{what}: the optimizer must update exactly the network's "
                             "trainable_params()")
        t.g.backward(loss._node)
        t.g.optimizer(*optimizer._c_args())
        t.optimizer = optimizer
    else:
        # A C model compiles a training step, which needs updates: plain
        # SGD's, which never run (Model.train refuses without an optimizer),
        # as the built-in LeNet5's evaluation-only Model has Momentum's.
        t.g.backward(loss._node)
        t.g.optimizer("sgd", 0.01, 0.0)
    return _make_model(t, inputs, logits._node, loss._node, context.get_context("mode"))


def trace_fn(fn, specs, what, not_a_step=None, forward_ok=False):
    """Traces one training step written by the user, fn(*inputs) on traced
    inputs of specs [(name, dtype, shape)]: a plain train_step(*columns), or
    a Cell whose construct is one (seed 004's own TrainOneStepCell). It must
    compute the gradients (a value_and_grad function, or
    ops.GradOperation's), apply an optimizer to them and return the loss;
    otherwise ValueError, or RuntimeError(not_a_step) when given and fn
    computed no gradients or applied no optimizer. With forward_ok, fn may
    instead compute neither (a network's forward pass): the trace's
    ``outputs`` then hold what it returned, a tensor or a tuple of them.
    Returns the finished _Trace and {name: traced input}."""
    is_cell = isinstance(fn, Cell)
    try:
        inspect.signature(fn.construct if is_cell else fn).bind(*(n for n, _, _ in specs))
    except TypeError as e:
        cols = ", ".join(n for n, _, _ in specs)
        if is_cell:
            raise TypeError(f"{what}: {type(fn).__name__}.construct must take one argument "
                            f"per dataset column ({cols}): {e}") from None
        raise TypeError(f"{what}: fn must be a TrainOneStepCell or a function called with one "
                        f"argument per dataset column ({cols}): {e}") from None
    except ValueError:
        pass                 # no signature to check (a builtin): the call will tell
    t = _Trace(seed=fn._seed if is_cell else 0)
    inputs = {name: t.input(name, dtype, shape) for name, dtype, shape in specs}
    out = fn(*inputs.values())
    t.outputs = None
    if forward_ok and t.loss is None and t.optimizer is None and t.grads is None:
        outs = out if isinstance(out, tuple) else (out,)
        if not outs or not all(isinstance(o, _Sym) for o in outs):
            raise TypeError(f"{what}: construct returned {out!r}; sluice runs a cell that "
                            "returns a tensor or a tuple of tensors")
        t.outputs, t.outputs_tuple = outs, isinstance(out, tuple)
        return t, inputs
    if not_a_step is not None and (t.loss is None or t.optimizer is None):
        raise RuntimeError(not_a_step)
    if t.loss is None:
        raise ValueError(f"{what}: the step computed no gradients: call the function "
                         "sluice.value_and_grad(forward_fn, None, weights) or "
                         "ops.GradOperation(get_by_list=True)(network, weights) returned in it")
    if t.optimizer is None:
        raise ValueError(f"{what}: the step applied no optimizer: call net_opt(grads) with the "
                         "grads it computed (sluice sinks training steps)")
    if isinstance(out, tuple) and out:
        out = out[0]
    if not isinstance(out, _Sym) or out._node != t.loss:
        raise ValueError(f"{what}: the step must return the loss it computed the gradients "
                         f"of (got {out!r})")
    return t, inputs


def trace_step(fn, dataset, mode, what="data_sink"):
    """The compilation of a training step written by the user (see
    :func:`trace_fn`) with the dataset's columns as inputs. Returns
    (model_c, owned, optimizer)."""
    t, inputs = trace_fn(fn, _input_specs(dataset, what), what)
    model_c, owned = _make_model(t, inputs, -1, t.loss, mode)
    return model_c, owned, t.optimizer


class TracedStep:
    """A training-step Cell of the user's own (seed 004's TrainOneStepCell:
    a construct(data, label) computing the loss, its gradients with
    ops.GradOperation and the optimizer's updates) as DatasetHelper and
    data_sink run it: traced by :func:`trace_step` when the first dataset
    gives the inputs' shapes, with the context's mode, and compiled once.
    It has the interface of :class:`sluice.train.Model` those use."""

    def __init__(self, cell):
        self.cell = cell
        self._c = None
        self._owned = None
        self._optimizer = None

    def _check_dataset(self, dataset, what, exact_batch=True, needs_end=False):
        """check_epoch's checks (tracing checks the columns)."""
        check_epoch(dataset, what, needs_end)

    def _ensure(self, dataset, what):
        if self._c is None:
            self._c, self._owned, self._optimizer = trace_step(
                self.cell, dataset, context.get_context("mode"), what)
        self._claim()

    def _claim(self):
        if self._c is not None:
            claim(self._c, self._owned, self._optimizer)
