"""Type stubs of sluice.train.tracing."""
from typing import Any, Callable, Dict, List, Optional, Tuple

from sluice.dataset import Dataset
from sluice.nn import Cell, Optimizer, Parameter


def check_epoch(dataset: Any, what: str, needs_end: bool = ...) -> None: ...
def claim(model_c: Any, owned: List[Tuple[Parameter, str]], optimizer: Any) -> None: ...
def trace_network(network: Cell, loss_fn: Cell, optimizer: Optimizer, dataset: Dataset,
                  what: str) -> Tuple[Any, List[Tuple[Parameter, str]]]: ...
def trace_fn(fn: Callable[..., Any], specs: List[Tuple[str, str, Tuple[int, ...]]], what: str,
             not_a_step: Optional[str] = ...) -> Tuple[Any, Dict[str, Any]]: ...
def trace_step(fn: Callable[..., Any], dataset: Dataset, mode: int,
               what: str = ...) -> Tuple[Any, List[Tuple[Parameter, str]], Any]: ...


class TracedStep:
    cell: Cell
    def __init__(self, cell: Cell) -> None: ...
