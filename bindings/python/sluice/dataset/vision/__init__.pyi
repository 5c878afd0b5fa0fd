"""Type stubs of sluice.dataset.vision."""
import enum
from typing import Optional, Sequence, Tuple, Union

from sluice.dataset.transforms import Operation

_Size = Union[int, Tuple[int, int], Sequence[int]]


class Inter(enum.IntEnum):
    LINEAR: int
    NEAREST: int
    BILINEAR: int


class Decode(Operation):
    def __init__(self, to_pil: bool = ..., rgb: bool = ...,
                 max_pixels: Optional[int] = ...) -> None: ...


class Resize(Operation):
    def __init__(self, size: Union[Tuple[int, int], Sequence[int]],
                 interpolation: Inter = ...) -> None: ...


class Rescale(Operation):
    def __init__(self, rescale: float, shift: float) -> None: ...


class Normalize(Operation):
    def __init__(self, mean: Sequence[float], std: Sequence[float],
                 is_hwc: bool = ...) -> None: ...


class HWC2CHW(Operation):
    def __init__(self) -> None: ...


class RandomCrop(Operation):
    def __init__(self, size: _Size, padding: Union[int, Sequence[int], None] = ...,
                 pad_if_needed: bool = ..., fill_value: int = ...) -> None: ...


class RandomHorizontalFlip(Operation):
    def __init__(self, prob: float = ...) -> None: ...
