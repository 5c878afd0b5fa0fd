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
optimizer's updates, and the compiled step runs in C. So ``grad_fn`` and
``net_opt`` only work inside a function given to data_sink; called on data
they raise an error saying so.
"""
from sluice.nn.cell import Parameter, _Grads, _Sym, _trace_of

__all__ = ["value_and_grad", "JitConfig"]


class _GradFn:
    """What value_and_grad returns: called inside a traced step, it runs fn,
    appends the backward of its loss and returns (loss, grads)."""

    def __init__(self, fn, weights):
        self.fn = fn
        self.weights = weights

    def __call__(self, *args):
        trace = _trace_of(args)
        if trace is None:
            raise RuntimeError("value_and_grad: the function was called on data; sluice "
                               "computes gradients in compiled steps only: call it inside the "
                               "train_step given to sluice.data_sink")
        if trace.loss is not None:
            raise ValueError("value_and_grad: the step already computed gradients; sluice "
                             "computes one backward per step")
        loss = self.fn(*args)
        if not isinstance(loss, _Sym):
            raise TypeError(f"value_and_grad: fn must return the loss (a traced scalar), it "
                            f"returned a {type(loss).__name__}")
        if loss.shape != ():
            raise ValueError(f"value_and_grad: fn must return a scalar loss; it returned a "
                             f"tensor of shape {loss.shape} (the loss cell must reduce it: "
                             "SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))")
        used = [p for p, _ in trace.params.values()]
        wanted = {id(w) for w in self.weights}
        missing = [p.name for p in used if id(p) not in wanted]
        if missing:
            raise ValueError(f"value_and_grad: the loss depends on parameters not in weights "
                             f"({', '.join(missing)}); sluice updates every parameter the loss "
                             "depends on, so give them all (network.trainable_params())")
        unused = [w.name for w in self.weights if id(w) not in {id(p) for p in used}]
        if unused:
            raise ValueError(f"value_and_grad: the loss does not depend on the weights "
                             f"{', '.join(unused)}")
        trace.g.backward(loss._node)
        trace.loss = loss._node
        nodes = [trace.g.grad(trace.params[id(w)][1]) for w in self.weights]
        trace.grads = _Grads(trace, self.weights, nodes)
        return loss, trace.grads


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
        has_aux: False only.

    The function works inside a step that :func:`sluice.data_sink` traces;
    its grads go to the optimizer (``net_opt(grads)``).
    """
    if grad_position is not None:
        raise ValueError("value_and_grad: sluice computes gradients of the weights only; give "
                         f"grad_position=None (got {grad_position!r})")
    if has_aux:
        raise ValueError("value_and_grad: has_aux=True is not supported; fn returns the loss")
    if weights is None:
        raise ValueError("value_and_grad: give the weights (network.trainable_params())")
    weights = tuple(weights)
    if not weights or not all(isinstance(w, Parameter) for w in weights):
        raise TypeError("value_and_grad: weights must be sluice.nn Parameters "
                        "(network.trainable_params())")
    if any(w._net is not None for w in weights):
        raise TypeError("value_and_grad: the built-in sluice.nn.LeNet5 is compiled whole; "
                        "write the network as a Cell of sluice.nn layers to trace it")
    if not callable(fn):
        raise TypeError(f"value_and_grad: fn must be callable, got {type(fn).__name__}")
    return _GradFn(fn, weights)


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

