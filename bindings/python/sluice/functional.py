"""sluice.functional: MindSpore's functional training, as sluice compiles it:
:func:`value_and_grad` and :class:`JitConfig` (also ``sluice.value_and_grad``
and ``sluice.JitConfig``). The seed's step reads unchanged::

    grad_fn = sluice.value_and_grad(forward_fn, None, weights)

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        net_opt(grads)
        return loss

    sink_process = sluice.data_sink(train_step, ds_train, sink_size=100)

sluice does not differentiate Python: :func:`sluice.data_sink` traces
``train_step`` once on symbolic tensors shaped like the dataset's batches,
``grad_fn`` appends the backward of the C graph and ``net_opt(grads)`` the
optimizer's updates, and the compiled step runs in C. Called on tensors in
a plain Python loop (``loss = train_step(data, label)``), ``grad_fn``
traces its function the same way (once per shapes) and returns a loss and
grads; ``net_opt(grads)`` then appends its updates, compiles the step the
first time and runs it on those tensors, which gives the loss its value:
the same step, bit for bit, as data_sink's.

:class:`GradOperation` (also ``sluice.ops.GradOperation``) is the same
backward for a training Cell written as MindSpore's TrainOneStepCell is
(seed 004's custom training loop): ``self.grad(self.network,
weights)(data, label, sens)`` in its construct.
"""
import numpy as np

from sluice import _sluice
from sluice.nn.cell import Parameter, _Grads, _Sym, _Trace, _is_data, _trace_of

__all__ = ["value_and_grad", "JitConfig", "GradOperation"]


def _backward(trace, loss, weights, what):
    """Appends the backward of loss (a traced scalar the weights' layers
    computed, or a per-sample loss, differentiated as its sum) to the trace
    and returns the grads, a _Grads of the weights."""
    if not isinstance(loss, _Sym):
        raise TypeError(f"{what}: fn must return the loss (a traced scalar), it "
                        f"returned a {type(loss).__name__}")
    if loss.shape != () and loss._node not in trace.losses:
        raise ValueError(f"{what}: fn must return a scalar loss; it returned a "
                         f"tensor of shape {loss.shape} (the loss cell must reduce it: "
                         "SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))")
    used = [p for p, _ in trace.params.values()]
    wanted = {id(w) for w in weights}
    missing = [p.name for p in used if id(p) not in wanted]
    if missing:
        raise ValueError(f"{what}: the loss depends on parameters not in weights "
                         f"({', '.join(missing)}); sluice updates every parameter the loss "
                         "depends on, so give them all (network.trainable_params())")
    unused = [w.name for w in weights if id(w) not in {id(p) for p in used}]
    if unused:
        raise ValueError(f"{what}: the loss does not depend on the weights "
                         f"{', '.join(unused)}")
    trace.g.backward(loss._node)
    trace.loss = loss._node
    nodes = [trace.g.grad(trace.params[id(w)][1]) for w in weights]
    trace.grads = _Grads(trace, weights, nodes)
    return trace.grads


def _weights(weights, what):
    """weights as a tuple of Parameters of a traceable network, or an error."""
    if weights is None:
        raise ValueError(f"{what}: give the weights (network.trainable_params())")
    weights = tuple(weights)
    if not weights or not all(isinstance(w, Parameter) for w in weights):
        raise TypeError(f"{what}: weights must be sluice.nn Parameters "
                        "(network.trainable_params())")
    if any(w._net is not None for w in weights):
        raise TypeError(f"{what}: the built-in sluice.nn.LeNet5 is compiled whole; "
                        "write the network as a Cell of sluice.nn layers to trace it")
    return weights


class _StepValue:
    """The loss (or, with has_aux, an aux output) value_and_grad returns
    when called on tensors (a train_step in a plain loop): known once the
    optimizer applied to its grads has run the step; then it reads as that
    output of the step, a sluice.Tensor."""

    def __init__(self):
        self._value = None

    def _tensor(self):
        if self._value is None:
            raise RuntimeError("value_and_grad: this loss (or aux output) is known once the "
                               "step has run, which it does when the optimizer is applied to "
                               "the grads returned with it (net_opt(grads)): read it after "
                               "that")
        return self._value

    shape = property(lambda self: self._tensor().shape)
    dtype = property(lambda self: self._tensor().dtype)

    def asnumpy(self):
        return self._tensor().asnumpy()

    def item(self):
        return self._tensor().item()

    def __float__(self):
        return float(self._tensor().item())

    def __array__(self, dtype=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def __format__(self, spec):
        return format(self.asnumpy(), spec) if spec else str(self)

    def __str__(self):
        return str(self.asnumpy()) if self._value is not None else "<loss of a step not run>"

    __repr__ = __str__


class _CompiledGrads(tuple):
    """The grads value_and_grad returns on tensors of shapes whose step is
    compiled already: the optimizer it was compiled with runs it."""

    def __new__(cls, grad_fn, specs, arrays, values):
        self = super().__new__(cls, ())
        self._eager = (grad_fn, specs, arrays, values)
        return self


def _run_eager_step(grad_fn, specs, arrays, values, optimizer, trace=None):
    """Runs the step of value_and_grad called on tensors, now that optimizer
    is applied to its grads: compiled from trace (forward, backward and the
    optimizer's updates; its outputs the loss and any aux outputs) the first
    time for these shapes, then kept on grad_fn. The parameters' current
    values go in, as for any Model; values (_StepValue) get the outputs."""
    from sluice import context
    from sluice.train.tracing import claim
    context._train_alone("a train_step in a plain loop")
    entry = grad_fn._compiled.get(specs)
    if entry is None:
        step = trace.g.make_step([trace.loss] + trace.aux, train=True,
                                 mode=context.get_context("mode"))
        owned = [(p, p.name) for p, _ in trace.params.values()]
        entry = grad_fn._compiled[specs] = (step, owned, optimizer, 1 + len(trace.aux))
    step, owned, compiled_for, _ = entry
    if optimizer is not compiled_for:
        raise ValueError(f"{type(optimizer).__name__}: this grad_fn's step on tensors of these "
                         f"shapes applies another optimizer ({type(compiled_for).__name__}); "
                         "apply the same one at every call")
    claim(step, owned, optimizer)
    for value, out in zip(values, step.run(arrays)):
        value._value = out
    return True


class _GradFn:
    """What value_and_grad returns: called inside a traced step, it runs fn,
    appends the backward of its loss and returns (loss, grads). Called on
    tensors (a train_step in a plain Python loop), it returns a loss and
    grads whose step runs when the optimizer is applied to them."""

    def __init__(self, fn, weights, has_aux=False):
        self.fn = fn
        self.weights = weights
        self.has_aux = has_aux
        self._compiled = {}     # input specs -> (step, owned, optimizer, outputs)

    def _split(self, out, trace):
        """(loss, aux outputs) of what fn returned: with has_aux a tuple
        whose first item is the loss, the rest traced tensors."""
        if not self.has_aux:
            return out, ()
        if not isinstance(out, tuple) or not out:
            raise TypeError(f"value_and_grad: with has_aux=True fn must return a tuple (loss, "
                            f"aux...), it returned a {type(out).__name__}")
        bad = [type(a).__name__ for a in out[1:] if not isinstance(a, _Sym)]
        if bad:
            raise TypeError(f"value_and_grad: fn's aux outputs must be tensors it computed, got "
                            f"{', '.join(bad)}")
        return out[0], out[1:]

    def _on_tensors(self, args):
        """MindSpore 2's train_step(data, label) called in a plain loop: fn
        traced on symbolic tensors of the arguments' shapes (once per
        shapes), its backward appended; the optimizer applied to the grads
        appends its updates and runs the compiled step on the arguments
        (_run_eager_step), which gives the loss its value."""
        arrays = [np.asarray(a.asnumpy() if isinstance(a, _sluice.Tensor) else a)
                  for a in args]
        bad = [str(a.dtype) for a in arrays if a.dtype.name not in ("float32", "int32")]
        if bad:
            raise TypeError(f"value_and_grad: inputs must be float32 or int32, got "
                            f"{', '.join(bad)}")
        specs = tuple((a.dtype.name, a.shape) for a in arrays)
        entry = self._compiled.get(specs)
        if entry is not None:
            values = [_StepValue() for _ in range(entry[3])]
            grads = _CompiledGrads(self, specs, arrays, values)
        else:
            t = _Trace()
            inputs = [t.input(f"input{i}", a.dtype.name, a.shape)
                      for i, a in enumerate(arrays)]
            loss, aux = self._split(self.fn(*inputs), t)
            grads = _backward(t, loss, self.weights, "value_and_grad")
            t.aux = [a._node for a in aux]
            values = [_StepValue() for _ in range(1 + len(aux))]
            t.eager = (self, specs, arrays, values)
        return (tuple(values) if self.has_aux else values[0]), grads

    def __call__(self, *args):
        trace = _trace_of(args)
        if trace is None and args and all(_is_data(a) for a in args):
            return self._on_tensors(args)
        if trace is None:
            kinds = ", ".join(sorted({type(a).__name__ for a in args})) or "nothing"
            raise TypeError(f"value_and_grad: the function was called on {kinds}: call it on "
                            "sluice.Tensor or numpy arrays (a train_step in a plain loop, whose "
                            "step runs when net_opt(grads) is applied) or inside the train_step "
                            "given to sluice.data_sink")
        if trace.loss is not None:
            raise ValueError("value_and_grad: the step already computed gradients; sluice "
                             "computes one backward per step")
        out = self.fn(*args)
        loss, _ = self._split(out, trace)
        return out, _backward(trace, loss, self.weights, "value_and_grad")


def value_and_grad(fn, grad_position=None, weights=None, has_aux=False):
    """MindSpore's value_and_grad: a function that returns ``(fn(*args),
    gradients of it with respect to weights)``.

    Args:
        fn: computes the loss (a scalar) from the step's inputs with sluice
            cells.
        grad_position: None only (sluice gives gradients of the weights,
            not of the inputs).
        weights: the parameters (``network.trainable_params()``): every
            parameter the loss depends on.
        has_aux: True: fn returns ``(loss, aux...)`` (MindSpore 2's quick
            start returns ``(loss, logits)``); the function then returns
            ``((loss, aux...), grads)``, the gradients of the loss alone.

    The function works inside a step that :func:`sluice.data_sink` traces,
    or called on tensors in a plain loop (the step runs when the optimizer
    is applied to the grads); its grads go to the optimizer
    (``net_opt(grads)``).
    """
    if grad_position is not None:
        raise ValueError("value_and_grad: sluice computes gradients of the weights only; give "
                         f"grad_position=None (got {grad_position!r})")
    weights = _weights(weights, "value_and_grad")
    if not callable(fn):
        raise TypeError(f"value_and_grad: fn must be callable, got {type(fn).__name__}")
    return _GradFn(fn, weights, bool(has_aux))


class JitConfig:
    """MindSpore's JitConfig, for :func:`sluice.data_sink`: giving one
    compiles the step in GRAPH mode (memory planned once). sluice compiles
    every step whatever the level; the arguments are recorded.

    Args:
        jit_level (str): "O0", "O1" (default) or "O2".
        exc_mode (str): "auto" (default), "sink" or "no_sink".
    """

    def __init__(self, jit_level="O1", exc_mode="auto", jit_syntax_level="", **kwargs):
        if jit_level not in ("O0", "O1", "O2"):
            raise ValueError(f"JitConfig: jit_level must be 'O0', 'O1' or 'O2', got "
                             f"{jit_level!r}")
        if exc_mode not in ("auto", "sink", "no_sink"):
            raise ValueError(f"JitConfig: exc_mode must be 'auto', 'sink' or 'no_sink', got "
                             f"{exc_mode!r}")
        self.jit_config_dict = dict(jit_level=jit_level, exc_mode=exc_mode,
                                    jit_syntax_level=jit_syntax_level, **kwargs)

    def __repr__(self):
        return f"JitConfig({self.jit_config_dict})"


def _check_sens(sens, loss, what):
    """Nothing if sens is 1.0 everywhere and of the loss's shape and dtype (as
    ops.Fill makes it), where sluice's backward starts; else an error
    naming what is wrong with it."""
    fill = "ops.Fill()(ops.DType()(loss), ops.Shape()(loss), value)"
    if isinstance(sens, _Sym):
        raise TypeError(f"{what}: sens is a traced tensor; sluice takes a constant sens "
                        f"of the loss's shape: {fill}")
    try:
        arr = np.asarray(sens.asnumpy() if hasattr(sens, "asnumpy") else sens)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype.kind not in "fiu":
        raise TypeError(f"{what}: sens must be a tensor of the loss's shape ({fill}), got "
                        f"a {type(sens).__name__}")
    if arr.shape != loss.shape or arr.dtype.name != loss.dtype:
        raise ValueError(f"{what}: sens is {arr.dtype.name} {arr.shape} but the loss is "
                         f"{loss.dtype} {loss.shape}: make it with {fill}")
    if not (arr == 1.0).all():
        flat = arr.reshape(-1)
        value = f"{float(flat[0])}" if (flat == flat[0]).all() else "not 1.0 everywhere"
        raise ValueError(f"{what}: sens is {value}; sluice's backward starts from a loss "
                         "gradient of 1.0, so only sens 1.0 is supported (scale the learning "
                         "rate instead)")


class _GradOfList:
    """What GradOperation(get_by_list=True)(fn, weights) returns: called
    inside a traced step with fn's inputs (and sens last, with
    sens_param), it appends the backward of fn's loss and returns the
    grads."""

    def __init__(self, fn, weights, sens_param):
        self.fn = fn
        self.weights = weights
        self.sens_param = sens_param

    def __call__(self, *args):
        what = "GradOperation"
        inputs, sens = (args[:-1], args[-1]) if self.sens_param and args else (args, None)
        if self.sens_param and not args:
            raise TypeError(f"{what}: sens_param=True: give fn's inputs and then sens")
        trace = _trace_of(inputs)
        if trace is None:
            raise RuntimeError(f"{what}: the gradient function was called on data; sluice "
                               "computes gradients in compiled steps only: call it inside the "
                               "construct of a training Cell connected to a DatasetHelper or "
                               "given to sluice.data_sink")
        if trace.loss is not None:
            raise ValueError(f"{what}: the step already computed gradients; sluice computes "
                             "one backward per step")
        # fn called on these inputs earlier in the step (loss = self.network(data,
        # label)): its traced forward is the one to differentiate, not a copy
        key = None
        if all(isinstance(a, _Sym) for a in inputs):
            key = (id(self.fn), tuple(a._node for a in inputs))
        earlier = trace.calls.get(key)
        loss = earlier[1] if earlier is not None else self.fn(*inputs)
        if isinstance(loss, _Sym) and self.sens_param:
            _check_sens(sens, loss, what)
        return _backward(trace, loss, self.weights, what)


class GradOperation:
    """MindSpore's GradOperation, as a custom TrainOneStepCell (seed 004)
    uses it::

        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        ...
        loss = self.network(data, label)
        sens = ops.Fill()(ops.DType()(loss), ops.Shape()(loss), self.sens)
        grads = self.grad(self.network, weights)(data, label, sens)
        return ops.depend(loss, self.optimizer(grads))

    ``grad(fn, weights)`` is a function of fn's inputs (then, with
    ``sens_param``, the sensitivity) that returns the gradients of fn's
    output, a scalar loss, with respect to the weights, one per weight in
    their order; the optimizer applies them. As :func:`value_and_grad`'s,
    it works inside a step sluice traces into one C graph (the construct of
    a Cell connected to a DatasetHelper or given to data_sink): called on
    data it raises RuntimeError. When fn was already called on the same
    inputs earlier in the step, as above, the step computes that forward
    once and differentiates it.

    Args:
        get_all: False only (sluice has no gradients of the inputs).
        get_by_list: True only: gradients of the weights given with fn.
        sens_param: the gradient function takes ``sens`` last, the loss's
            gradient: a constant tensor of the loss's shape and dtype
            (``ops.Fill``). sluice's backward starts from 1.0, so another
            value is refused with ValueError. False: sens is 1.0.
    """

    def __init__(self, get_all=False, get_by_list=False, sens_param=False):
        if get_all:
            raise ValueError("GradOperation: get_all=True (gradients of the inputs) is not "
                             "supported; sluice computes gradients of the weights: give "
                             "get_by_list=True")
        if not get_by_list:
            raise ValueError("GradOperation: sluice computes gradients of the weights only: "
                             "give get_by_list=True and call grad(network, weights) "
                             "(gradients of the inputs, get_by_list=False, are not supported)")
        self.get_all = False
        self.get_by_list = True
        self.sens_param = bool(sens_param)

    def __call__(self, fn, weights=None):
        """The gradient function of fn with respect to weights (a
        ParameterTuple of the network's trainable_params())."""
        if not callable(fn):
            raise TypeError(f"GradOperation: fn must be a Cell or a function, got "
                            f"{type(fn).__name__}")
        return _GradOfList(fn, _weights(weights, "GradOperation"), self.sens_param)
