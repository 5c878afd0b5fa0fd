"""Type stubs of sluice.dataset.vision.c_transforms."""
from sluice.dataset.vision import (HWC2CHW as HWC2CHW, Decode as Decode, Inter as Inter,
                                   Normalize as Normalize, RandomCrop as RandomCrop,
                                   RandomHorizontalFlip as RandomHorizontalFlip,
                                   RandomVerticalFlip as RandomVerticalFlip,
                                   Rescale as Rescale, Resize as Resize,
                                   RandomResizedCrop as RandomResizedCrop,
                                   CenterCrop as CenterCrop,
                                   RandomColorAdjust as RandomColorAdjust)
