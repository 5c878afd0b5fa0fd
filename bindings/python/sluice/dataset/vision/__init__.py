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
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "CenterCrop",
           "RandomColorAdjust"]


def _no_such_name(module, names, more=""):
    """A module __getattr__ that answers a name the module lacks with the
    ones it has."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{module} has no {name!r}: it has {', '.join(names)}{more}")
    return __getattr__


__getattr__ = _no_such_name("sluice.dataset.vision", __all__,
                            " (TypeCast, OneHot, Compose: sluice.dataset.transforms)")


class _Members(enum.EnumMeta):
    """An enum whose missing members answer with the ones it has."""

    def __getattr__(cls, name):
        members = cls.__dict__.get("_member_map_", {})
        if name in members:
            return members[name]
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"{cls.__name__} has no {name!r}: it has "
                             f"{', '.join(members)}") from None


class Inter(enum.IntEnum, metaclass=_Members):
    """Interpolation of :class:`Resize` and :class:`RandomResizedCrop`;
    MindSpore's other members (AREA, PILCUBIC, ANTIALIAS) are not in sluice."""
    #: Bilinear with half-pixel centres: OpenCV's INTER_LINEAR, value for value.
    LINEAR = 0
    #: Nearest neighbour (OpenCV's INTER_NEAREST).
    NEAREST = 1
    #: Keys' bicubic (a = -0.75), half-pixel centres, border replicated, no
    #: antialiasing: OpenCV's INTER_CUBIC in its fixed point for uint8.
    BICUBIC = 2
    BILINEAR = 0
    CUBIC = 2


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
    """Resizes (H, W, C) or (H, W) images, uint8 or float32. LINEAR
    reproduces OpenCV's INTER_LINEAR (what MindSpore's Resize returns) value
    for value for uint8.

    Args:
        size (int or (int, int)): (height, width) of the output; or an int,
            the length of the shorter side, the longer one becoming
            ``round(longer / shorter * size)`` (in float32, halves away from
            zero: MindSpore's arithmetic; torchvision truncates, so its
            longer side can be one pixel less). Images then keep their
            aspect ratio and differ in size: crop them (CenterCrop) before
            a batch.
        interpolation (Inter): ``Inter.LINEAR`` (bilinear, the default),
            ``Inter.NEAREST`` (OpenCV's INTER_NEAREST) or ``Inter.BICUBIC``
            (OpenCV's INTER_CUBIC: uint8 as its scalar code computes it;
            its SIMD code rounds in float and may differ by one level).
    """

    __slots__ = ()

    def __init__(self, size, interpolation=Inter.LINEAR):
        if isinstance(size, int) and not isinstance(size, bool):
            self._op = _sluice.op_resize_shorter_side(size, int(interpolation))
            return
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


class RandomVerticalFlip(Operation):
    """Turns an image upside down with probability ``prob``, drawn per
    sample from the dataset's seed, independently of RandomHorizontalFlip
    (even when both are called with one seed)."""

    __slots__ = ()

    def __init__(self, prob=0.5):
        self._op = _sluice.op_random_vertical_flip(float(prob))


def _pair(value, what, name):
    """(min, max) from a 2-sequence of numbers."""
    try:
        lo, hi = value
        return float(lo), float(hi)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} must be a (min, max) pair, got {value!r}") from None


class RandomResizedCrop(Operation):
    """Crops a random box of the image and resizes it to ``size``: the
    ImageNet training crop. The box is drawn as torchvision's
    ``RandomResizedCrop.get_params`` draws it: up to ``max_attempts`` times
    an area fraction uniform in ``scale`` and an aspect ratio (width /
    height) log-uniform in ``ratio``; the first box that fits is placed
    uniformly; otherwise the whole image, its ratio clamped into ``ratio``,
    centred. Drawn per sample from the dataset's seed.

    Args:
        size (int or (int, int)): the output, (height, width); an int for a
            square.
        scale ((float, float)): the box's area as a fraction of the
            image's, 0 <= min <= max (default (0.08, 1.0)).
        ratio ((float, float)): the box's width / height, 0 < min <= max
            (default (3/4, 4/3)).
        interpolation (Inter): of the resize (default ``Inter.BILINEAR``;
            ``Inter.NEAREST`` and ``Inter.BICUBIC`` as :class:`Resize`).
        max_attempts (int): draws before the fallback (default 10).
    """

    __slots__ = ()

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=Inter.BILINEAR, max_attempts=10):
        h, w = _size(size, "RandomResizedCrop")
        s0, s1 = _pair(scale, "RandomResizedCrop", "scale")
        r0, r1 = _pair(ratio, "RandomResizedCrop", "ratio")
        self._op = _sluice.op_random_resized_crop(h, w, s0, s1, r0, r1, int(interpolation),
                                                  operator.index(max_attempts))

    def get_box(self, height, width, seed):
        """The box (top, left, height, width) this operator draws for a
        ``height`` x ``width`` image when called with ``seed`` (as
        ``Operation.__call__``'s seed)."""
        return _sluice.op_random_resized_crop_box(self._op, operator.index(height),
                                                  operator.index(width), operator.index(seed))


class CenterCrop(Operation):
    """Crops the central ``size`` window (an int for a square, or (height,
    width)), as MindSpore: its top-left corner at ``floor((H - height) /
    2)``, ``floor((W - width) / 2)``; where the window is larger than the
    image, zeros fill the rest (the odd row or column on top / left).
    torchvision rounds those offsets half to even: when ``H - height`` is 3
    modulo 4 its window lies one row lower. Any dtype."""

    __slots__ = ()

    def __init__(self, size):
        h, w = _size(size, "CenterCrop")
        self._op = _sluice.op_center_crop(h, w)


def _factor_range(value, what, name, centre, bound):
    """MindSpore's factor argument: f gives [max(lo, centre - f), centre + f]
    (f >= 0, and f <= bound for hue), or a (min, max) pair."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = float(value)
        if not f >= 0 or (bound is not None and f > bound):
            top = "" if bound is None else f" and <= {bound}"
            raise ValueError(f"{what}: {name} must be >= 0{top}, got {value!r}")
        lo = centre - f if centre == 0 else max(0.0, centre - f)
        return lo, centre + f
    return _pair(value, what, name)


class RandomColorAdjust(Operation):
    """Changes brightness, contrast, saturation and hue of a uint8 RGB image
    (H, W, 3) by factors drawn per sample, in a random order (MindSpore's
    RandomColorAdjust, torchvision's ColorJitter). Each of brightness,
    contrast and saturation is a float f, for factors in [max(0, 1 - f),
    1 + f], or a (min, max) pair; hue is a float f in [0, 0.5], for turns in
    [-f, f] of the colour wheel, or a pair within [-0.5, 0.5]. The defaults
    change nothing. Each step rounds to the nearest level (MindSpore's
    arithmetic; torchvision truncates); hue turns in float HSV.
    """

    __slots__ = ()

    def __init__(self, brightness=(1, 1), contrast=(1, 1), saturation=(1, 1), hue=(0, 0)):
        what = "RandomColorAdjust"
        self._op = _sluice.op_random_color_adjust(
            _factor_range(brightness, what, "brightness", 1.0, None),
            _factor_range(contrast, what, "contrast", 1.0, None),
            _factor_range(saturation, what, "saturation", 1.0, None),
            _factor_range(hue, what, "hue", 0.0, 0.5))
