"""Reading IDX files (the MNIST format) for the benchmark scripts."""
import gzip
import os

import numpy as np


def read_idx(path, magic=None):
    """An IDX file, plain or gzip (path, or path + ".gz" when only that
    exists), as a numpy uint8 array. The header is a big-endian magic
    (0, 0, 0x08 for ubyte, ndim) and ndim big-endian uint32 sizes; with
    magic given, any other magic is an error."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    m = int(np.frombuffer(raw, ">u4", 1)[0])
    if magic is not None and m != magic:
        raise ValueError(f"{path}: bad IDX magic {m:#x}, expected {magic:#x}")
    ndim = m & 0xFF
    dims = [int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)
