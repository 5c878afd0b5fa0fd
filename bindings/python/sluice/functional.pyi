"""Type stubs of sluice.functional."""
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from sluice.nn.cell import Parameter


def value_and_grad(fn: Callable[..., Any], grad_position: Optional[Any] = ...,
                   weights: Optional[Iterable[Parameter]] = ...,
                   has_aux: bool = ...) -> Callable[..., Tuple[Any, Tuple[Any, ...]]]: ...


class JitConfig:
    jit_config_dict: Dict[str, Any]
    def __init__(self, jit_level: str = ..., exc_mode: str = ..., jit_syntax_level: str = ...,
                 **kwargs: Any) -> None: ...


class GradOperation:
    get_all: bool
    get_by_list: bool
    sens_param: bool
    def __init__(self, get_all: bool = ..., get_by_list: bool = ...,
                 sens_param: bool = ...) -> None: ...
    def __call__(self, fn: Callable[..., Any], weights: Optional[Iterable[Parameter]] = ...
                 ) -> Callable[..., Tuple[Any, ...]]: ...
