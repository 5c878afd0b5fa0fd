"""sluice.dataset.vision: image operators, as ``mindspore.dataset.vision``.

Images are HWC (height, width, channels); a 2-D (H, W) image counts as one
channel where an operator says so. Each operator is one C operator run by
the map workers; each may also be called on one numpy array directly.
"""
import enum
import operator

from sluice import _sluice
from sluice.dataset.transforms import Operation

__all__ = ["Inter", "Decode", "Resize", "Rescale", "Normalize", "HWC2CHW", "RandomCrop",
           "RandomHorizontalFlip"]


class Inter(enum.IntEnum):
    """Interpolation of :class:`Resize`."""
    #: Bilinear with half-pixel centres: OpenCV's INTER_LINEAR, value for value.
    LINEAR = 0
    #: Nearest neighbour (OpenCV's INTER_NEAREST).
    NEAREST = 1
    BILINEAR = 0


def _size(size, what):
    """(height, width) from an int pair (an int means a square here)."""
    if isinstance(size, int):
        return size, size
    try:
        h, w = size
        return operator.index(h), operator.index(w)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: size must be an int or (height, width), got {size!r}") from None


class Decode(Operation):
    """JPEG bytes (uint8 (n,)) to an RGB image uint8 (H, W, 3) (libjpeg-turbo);
    ``rgb=False`` gives grayscale (H, W, 1). A corrupt or truncated JPEG is
    an error naming the file, and so is one whose header declares more than
    ``max_pixels`` pixels (default None: 2^26, 8192 x 8192), refused before
    anything is allocated for it (a decompression bomb).

    Args:
        to_pil (bool): MindSpore's; False only (sluice decodes to arrays,
            not PIL images).
        rgb (bool): RGB (H, W, 3), the default, or grayscale (H, W, 1).
        max_pixels (int): the most pixels a header may declare (None: 2^26).
    """

    __slots__ = ()

    def __init__(self, to_pil=False, rgb=True, max_pixels=None):
        if to_pil:
            raise ValueError("Decode: sluice decodes to arrays, not PIL images (to_pil=False)")
        limit = 0 if max_pixels is None else operator.index(max_pixels)
        if max_pixels is not None and limit < 1:
            raise ValueError(f"Decode: max_pixels must be >= 1, got {limit}")
        self._op = _sluice.op_decode(bool(rgb), limit)


class Resize(Operation):
    """Resizes (H, W, C) or (H, W) images, uint8 or float32, to
    ``size = (height, width)``. LINEAR reproduces OpenCV's INTER_LINEAR
    (what MindSpore's Resize returns) value for value for uint8.

    An int ``size`` resizes the shorter side in MindSpore, keeping the aspect
    ratio; sluice's engine makes fixed shapes, so it refuses an int: give
    (height, width).

    Args:
        size ((int, int)): (height, width) of the output.
        interpolation (Inter): ``Inter.LINEAR`` (bilinear, the default) or
            ``Inter.NEAREST`` (OpenCV's INTER_NEAREST).
    """

    __slots__ = ()

    def __init__(self, size, interpolation=Inter.LINEAR):
        if isinstance(size, int):
            raise ValueError("Resize: an int size keeps the aspect ratio in MindSpore, which "
                             "sluice's fixed-shape Resize cannot do; give (height, width)")
        h, w = _size(size, "Resize")
        self._op = _sluice.op_resize(h, w, int(interpolation))


class Rescale(Operation):
    """Any numeric image to float32 ``x * rescale + shift``."""

    __slots__ = ()

    def __init__(self, rescale, shift):
        self._op = _sluice.op_rescale(float(rescale), float(shift))


class Normalize(Operation):
    """(H, W, C) to float32 ``(x - mean[c]) / std[c]``, one mean and std per
    channel (all std > 0)."""

    __slots__ = ()

    def __init__(self, mean, std, is_hwc=True):
        if not is_hwc:
            raise ValueError("Normalize: sluice normalizes HWC images (is_hwc=True); "
                             "put HWC2CHW after it")
        self._op = _sluice.op_normalize(list(mean), list(std))


class HWC2CHW(Operation):
    """(H, W, C) to (C, H, W), any type (no copy when C is 1)."""

    __slots__ = ()

    def __init__(self):
        self._op = _sluice.op_hwc2chw()


class RandomCrop(Operation):
    """Pads every side with ``padding`` zeros, then crops a ``size`` window
    (an int for a square, or (height, width)) at a random place, drawn per
    sample from the dataset's seed.

    Args:
        size (int or (int, int)): the window.
        padding (int or sequence of equal ints): zeros added on every side
            (default None: none); sluice pads all sides alike.
        pad_if_needed (bool): MindSpore's; False only (give padding).
        fill_value (int): MindSpore's; 0 only (sluice pads with zeros).
    """

    __slots__ = ()

    def __init__(self, size, padding=None, pad_if_needed=False, fill_value=0):
        h, w = _size(size, "RandomCrop")
        if padding is None:
            pad = 0
        elif isinstance(padding, int):
            pad = padding
        else:
            pads = [operator.index(p) for p in padding]
            if len(set(pads)) != 1:
                raise ValueError("RandomCrop: sluice pads every side alike; give one padding")
            pad = pads[0]
        if pad_if_needed:
            raise ValueError("RandomCrop: pad_if_needed is not supported (pad with padding)")
        if fill_value != 0:
            raise ValueError("RandomCrop: sluice pads with zeros (fill_value=0)")
        self._op = _sluice.op_random_crop(h, w, pad)


class RandomHorizontalFlip(Operation):
    """Mirrors an image left-right with probability ``prob``, drawn per sample
    from the dataset's seed."""

    __slots__ = ()

    def __init__(self, prob=0.5):
        self._op = _sluice.op_random_horizontal_flip(float(prob))
