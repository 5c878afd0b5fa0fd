"""sluice: a threaded C dataset engine for Python trainers.

sluice reads samples (MNIST IDX files, folders of JPEGs), transforms them in
worker threads of its C engine, shuffles and batches them, and hands the
batches to Python without a copy: a batch is a :class:`Tensor` whose memory
numpy (buffer protocol) and PyTorch (DLPack) share. Waiting for a batch
releases the GIL, so no worker processes are needed.

The names follow ``mindspore.dataset``::

    import sluice
    import sluice.dataset as ds
    import sluice.dataset.vision as vision
    import sluice.dataset.transforms as transforms

    d = ds.MnistDataset("/usr/share/datasets/fashion-mnist", usage="train")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / 0.3081, -0.1307 / 0.3081),
                          vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=2)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.shuffle(10000).batch(32, drop_remainder=True)
    for image, label in d.create_tuple_iterator(num_epochs=1):
        ...                                  # image: Tensor float32 (32, 1, 32, 32)

``d.to_torch()`` gives an iterable of torch tensors to use where a
``torch.utils.data.DataLoader`` was.

Element types are named by strings; :data:`uint8`, :data:`int32`,
:data:`uint32`, :data:`int64`, :data:`float32` and :data:`float64` hold them,
as ``mindspore.int32`` and friends do.
"""
from sluice import _sluice
from sluice._sluice import Tensor

__version__ = _sluice.version()

#: Element type names (``transforms.TypeCast(sluice.int32)``).
uint8 = "uint8"
int32 = "int32"
uint32 = "uint32"
int64 = "int64"
float32 = "float32"
float64 = "float64"

from sluice import dataset  # noqa: E402  (needs the names above)

__all__ = ["Tensor", "dataset", "uint8", "int32", "uint32", "int64", "float32", "float64",
           "__version__"]
