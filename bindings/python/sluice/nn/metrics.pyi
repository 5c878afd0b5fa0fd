"""Type stubs of sluice.nn.metrics."""


class Accuracy:
    eval_type: str
    def __init__(self, eval_type: str = ...) -> None: ...


class Loss:
    ...
