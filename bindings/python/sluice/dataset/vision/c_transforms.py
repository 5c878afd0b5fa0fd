"""sluice.dataset.vision.c_transforms: MindSpore 1.x's module name for the
image operators of :mod:`sluice.dataset.vision` (``import
mindspore.dataset.vision.c_transforms as CV``). The same classes: sluice's
operators all run in C."""
from sluice.dataset.vision import (HWC2CHW, CenterCrop, Decode, Inter, Normalize,
                                   RandomColorAdjust, RandomCrop, RandomHorizontalFlip,
                                   RandomResizedCrop, RandomVerticalFlip, Rescale, Resize,
                                   _no_such_name)

__all__ = ["Inter", "Decode", "Resize", "Rescale", "Normalize", "HWC2CHW", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "CenterCrop",
           "RandomColorAdjust"]

__getattr__ = _no_such_name("sluice.dataset.vision.c_transforms", __all__)
