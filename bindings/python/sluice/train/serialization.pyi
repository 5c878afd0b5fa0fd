"""Type stubs of sluice.train.serialization."""
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from sluice.nn import Cell, Parameter

_Path = Union[str, "os.PathLike[str]"]


def save_checkpoint(save_obj: Any, ckpt_file_name: _Path) -> None: ...
def load_checkpoint(ckpt_file_name: _Path,
                    net: Optional[Cell] = ...) -> Dict[str, Parameter]: ...
def load_param_into_net(net: Cell, parameter_dict: Mapping[str, Any]) -> List[str]: ...
