"""Type stubs of sluice.context."""
from typing import Any, Optional

GRAPH_MODE: int
PYNATIVE_MODE: int


def set_context(*, mode: int = ..., device_target: str = ..., device_id: int = ...,
                save_graphs: bool = ..., save_graphs_path: str = ...) -> None: ...
def get_context(attr_key: str) -> Any: ...
def set_seed(seed: int) -> None: ...
def get_seed() -> int: ...


class ParallelMode:
    STAND_ALONE: str
    DATA_PARALLEL: str
    HYBRID_PARALLEL: str
    SEMI_AUTO_PARALLEL: str
    AUTO_PARALLEL: str


def set_auto_parallel_context(*, parallel_mode: str = ..., gradients_mean: bool = ...,
                              device_num: Optional[int] = ...) -> None: ...
def get_auto_parallel_context(attr_key: str) -> Any: ...
def reset_auto_parallel_context() -> None: ...
