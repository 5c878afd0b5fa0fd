"""Type stubs of sluice.dataset.vision."""
import enum
from typing import Optional, Sequence, Tuple, Union

from sluice.dataset.transforms import Operation

_Size = Union[int, Tuple[int, int], Sequence[int]]


class Inter(enum.IntEnum):
    LINEAR: int
    NEAREST: int
    BICUBIC: int
    BILINEAR: int
    CUBIC: int


class Decode(Operation):
    def __init__(self, to_pil: bool = ..., rgb: bool = ...,
                 max_pixels: Optional[int] = ...) -> None: ...


class Resize(Operation):
    def __init__(self, size: _Size, interpolation: Inter = ...) -> None: ...


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


class RandomVerticalFlip(Operation):
    def __init__(self, prob: float = ...) -> None: ...


_Range = Union[float, Tuple[float, float], Sequence[float]]


class RandomResizedCrop(Operation):
    def __init__(self, size: _Size, scale: Tuple[float, float] = ...,
                 ratio: Tuple[float, float] = ..., interpolation: Inter = ...,
                 max_attempts: int = ...) -> None: ...
    def get_box(self, height: int, width: int, seed: int) -> Tuple[int, int, int, int]: ...


class CenterCrop(Operation):
    def __init__(self, size: _Size) -> None: ...


class RandomColorAdjust(Operation):
    def __init__(self, brightness: _Range = ..., contrast: _Range = ...,
                 saturation: _Range = ..., hue: _Range = ...) -> None: ...
