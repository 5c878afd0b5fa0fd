"""sluice.dataset.transforms.c_transforms: MindSpore 1.x's module name for
the operators of :mod:`sluice.dataset.transforms` (``import
mindspore.dataset.transforms.c_transforms as C``). The same classes: sluice's
operators all run in C."""
from sluice.dataset.transforms import Compose, OneHot, Operation, TypeCast

__all__ = ["Operation", "TypeCast", "OneHot", "Compose"]
