"""Type stubs of sluice.dataset.transforms.c_transforms."""
from sluice.dataset.transforms import (Compose as Compose, OneHot as OneHot,
                                       Operation as Operation, TypeCast as TypeCast)
