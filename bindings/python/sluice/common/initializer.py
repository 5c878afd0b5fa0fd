"""sluice.common.initializer: how a layer's parameters start, as
``mindspore.common.initializer``.

An initializer only describes the values; a network makes them when they
are first needed (:meth:`sluice.nn.Cell.trainable_params` followed by
``asnumpy()``, or training), from the seed of :func:`sluice.set_seed` at
the time the network was made and the parameter's position in
``trainable_params()``. So a network whose parameters come in the order of
:class:`sluice.nn.LeNet5`'s, with TruncatedNormal(0.02), starts from exactly
its values.

:class:`TruncatedNormal`, :class:`Zero` and :class:`One` are made by the C
library's generator; :class:`Normal` by numpy's, seeded by the same seed
and position. A layer also takes a name (``"normal"``, ``"zeros"``,
``"ones"``, ``"truncatedNormal"``) or the values themselves (an array or
:class:`sluice.Tensor` of the parameter's shape).
"""
import math

__all__ = ["Initializer", "TruncatedNormal", "Normal", "Zero", "One", "initializer"]


class Initializer:
    """The base of the initializers. ``kind`` names the generator: "zeros",
    "ones", "truncated_normal" or "normal"; ``sigma`` the spread."""

    kind = None

    def __init__(self, sigma=0.0):
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or \
                not math.isfinite(sigma) or sigma < 0:
            raise ValueError(f"{type(self).__name__}: sigma must be a number >= 0, got {sigma!r}")
        self.sigma = float(sigma)

    def __repr__(self):
        return f"{type(self).__name__}(sigma={self.sigma})" if self.sigma else \
            f"{type(self).__name__}()"


class TruncatedNormal(Initializer):
    """Normal(0, sigma) values cut at +-2 sigma (redrawn beyond), as
    MindSpore's. sigma defaults to 0.01 as there; the seeds use 0.02."""

    kind = "truncated_normal"

    def __init__(self, sigma=0.01):
        super().__init__(sigma)
        if not self.sigma > 0:
            raise ValueError("TruncatedNormal: sigma must be > 0")


class Normal(Initializer):
    """Normal(mean, sigma) values (sigma default 0.01, mean 0), drawn by
    numpy's generator seeded by the network's seed and the parameter's
    position."""

    kind = "normal"

    def __init__(self, sigma=0.01, mean=0.0):
        super().__init__(sigma)
        if isinstance(mean, bool) or not isinstance(mean, (int, float)) or \
                not math.isfinite(mean):
            raise ValueError(f"Normal: mean must be a finite number, got {mean!r}")
        self.mean = float(mean)


class Zero(Initializer):
    """All zeros."""

    kind = "zeros"


class One(Initializer):
    """All ones."""

    kind = "ones"


_NAMES = {"zeros": Zero, "zero": Zero, "ones": One, "one": One, "normal": Normal,
          "truncatednormal": TruncatedNormal, "truncated_normal": TruncatedNormal}


def initializer(init, shape=None, dtype="float32"):
    """An :class:`Initializer` for ``init``: an initializer (returned as it
    is), or a name (``"normal"``, ``"zeros"``, ``"ones"``,
    ``"truncatedNormal"``). ``shape`` and ``dtype`` are accepted for
    MindSpore's signature; the layer gives the shape. Other names (and
    dtypes other than float32) raise ValueError naming what sluice has."""
    if dtype not in ("float32", None):
        raise ValueError(f"initializer: sluice's parameters are float32, not {dtype!r}")
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        cls = _NAMES.get(init.lower())
        if cls is None:
            raise ValueError(f"initializer: sluice has no initializer {init!r}; it has "
                             "'normal', 'zeros', 'ones', 'truncatedNormal' (or give the "
                             "values as an array)")
        return cls()
    raise TypeError(f"initializer: give an Initializer, a name or an array, got "
                    f"{type(init).__name__}")
