"""sluice.nn.metrics: what :meth:`sluice.train.Model.eval` can measure, as
``mindspore.nn.metrics`` (``from sluice.nn.metrics import Accuracy``; also
``sluice.nn.Accuracy`` and ``sluice.train.Accuracy``). The C evaluator
computes them; these classes name them in ``Model(metrics={...})``."""

__all__ = ["Accuracy", "Loss"]


class Accuracy:
    """The fraction of samples whose largest logit is their label (a metric
    of :class:`~sluice.train.Model`: ``metrics={"Accuracy": Accuracy()}``).

    Args:
        eval_type (str): ``"classification"`` (the default; the only kind
            sluice has, as its networks classify).
    """

    _kind = "accuracy"

    def __init__(self, eval_type="classification"):
        if eval_type != "classification":
            raise ValueError(f"Accuracy: eval_type must be 'classification', got {eval_type!r}")
        self.eval_type = eval_type


class Loss:
    """The mean loss over the samples (a metric of :class:`~sluice.train.Model`)."""

    _kind = "loss"
