"""Zero copy: numpy arrays, DLPack capsules and torch tensors share a
batch's memory; the memory lives as long as any of them, then goes back to
the pool; read-only memory (a source row no op copied) is never handed out
writable."""
import ctypes
import gc

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
from conftest import pixels


def batches(mnist, n=32, workers=2):
    d = ds.MnistDataset(mnist, usage="train", shuffle=False)
    d = d.map([vision.Rescale(1.0, 0.0)], input_columns="image", num_parallel_workers=workers)
    d = d.map(transforms.TypeCast("int32"), input_columns="label")
    return d.batch(n, drop_remainder=True)


def get_buffer(obj, writable):
    """PyObject_GetBuffer with PyBUF_WRITABLE or not, then PyBuffer_Release."""
    view = ctypes.create_string_buffer(256)  # larger than a Py_buffer
    get, release = ctypes.pythonapi.PyObject_GetBuffer, ctypes.pythonapi.PyBuffer_Release
    get.argtypes, get.restype = [ctypes.py_object, ctypes.c_void_p, ctypes.c_int], ctypes.c_int
    release.argtypes, release.restype = [ctypes.c_void_p], None
    get(obj, view, 1 if writable else 0)
    release(view)


def capsule_name(cap):
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(cap).decode()


def versioned_flags(cap):
    """The flags of a DLManagedTensorVersioned (DLPack 1.0: version (2 x u32),
    manager_ctx, deleter, then the u64 flags)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    p = get(cap, b"dltensor_versioned")
    major, minor = ctypes.c_uint32.from_address(p).value, ctypes.c_uint32.from_address(p + 4).value
    flags = ctypes.c_uint64.from_address(p + 8 + 2 * ctypes.sizeof(ctypes.c_void_p)).value
    return (major, minor), flags


def test_buffer_protocol_shares_memory(mnist):
    image, label = next(iter(batches(mnist)))
    a = np.asarray(image)
    assert a.shape == (32, 28, 28, 1) and a.dtype == np.float32
    assert a.ctypes.data == image.data_ptr()
    assert a.flags.writeable and not image.readonly
    a[0, 0, 0, 0] = 123.0  # a batch is ours: writes show through every view
    assert np.asarray(image)[0, 0, 0, 0] == 123.0
    m = memoryview(image)
    assert m.format == "f" and m.shape == (32, 28, 28, 1) and m.nbytes == image.nbytes
    assert np.asarray(label).dtype == np.int32 and len(label) == 32


def test_source_rows_are_read_only(mnist):
    image, label = next(iter(ds.MnistDataset(mnist, usage="train", shuffle=False)))
    assert image.readonly
    a = np.asarray(image)
    assert a.ctypes.data == image.data_ptr() and not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0, 0] = 1
    with pytest.raises(BufferError):  # a writable buffer is refused
        get_buffer(image, writable=True)
    get_buffer(image, writable=False)
    # DLPack unversioned cannot say read-only: a copy, or BufferError if refused
    cap = image.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    copied = np.from_dlpack(image)
    assert copied.ctypes.data != image.data_ptr()
    assert np.array_equal(copied, a)
    with pytest.raises(BufferError):
        image.__dlpack__(copy=False)
    # DLPack 1.0 says read-only and shares
    cap = image.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    version, flags = versioned_flags(cap)
    assert version == (1, 0) and flags & 1 and not flags & 2


def test_lifetime_past_iterator_and_dataset(mnist):
    """A batch outlives its iterator and dataset, and its pool."""
    d = batches(mnist, 25)
    it = d.create_tuple_iterator(num_epochs=1)
    kept = [next(it) for _ in range(2)]
    arrays = [np.asarray(img) for img, _ in kept]
    del it, d
    gc.collect()
    for k, arr in enumerate(arrays):
        assert np.array_equal(arr[:, :, :, 0], pixels(25 * k, 25).astype(np.float32))
    # the array alone keeps the memory
    del kept
    gc.collect()
    assert np.array_equal(arrays[1][:, :, :, 0], pixels(25, 25).astype(np.float32))


def test_dlpack_capsules(mnist):
    image, _ = next(iter(batches(mnist)))
    assert image.__dlpack_device__() == (1, 0)
    assert image._refcount() == 1
    cap = image.__dlpack__()
    assert capsule_name(cap) == "dltensor" and image._refcount() == 2
    del cap  # never consumed: its destructor gives the reference back
    assert image._refcount() == 1
    cap = image.__dlpack__(max_version=(1, 2), stream=None)
    version, flags = versioned_flags(cap)
    assert version == (1, 0) and flags == 0
    del cap
    copy = image.__dlpack__(copy=True, max_version=(1, 0))
    assert versioned_flags(copy)[1] == 2  # IS_COPIED
    assert image._refcount() == 1
    b = np.from_dlpack(image)
    assert b.ctypes.data == image.data_ptr() and image._refcount() == 2
    del b
    assert image._refcount() == 1
    with pytest.raises(BufferError):
        image.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        image.__dlpack__(stream=3)
    with pytest.raises(TypeError):
        image.__dlpack__(max_version=1)


def test_torch_from_dlpack_shares_memory(mnist):
    torch = pytest.importorskip("torch")
    image, label = next(iter(batches(mnist)))
    t = torch.from_dlpack(image)
    assert t.data_ptr() == image.data_ptr()
    assert t.shape == (32, 28, 28, 1) and t.dtype == torch.float32
    assert image._refcount() == 2
    del image
    gc.collect()
    assert t[3, 0, 0, 0].item() == float(pixels(3, 1)[0, 0, 0])  # still valid
    lab = torch.from_dlpack(label)
    assert lab.dtype == torch.int32 and lab.tolist() == list(range(10)) * 3 + [0, 1]


def test_to_torch(mnist):
    torch = pytest.importorskip("torch")
    loader = batches(mnist, 10).to_torch()
    assert len(loader) == 10
    epochs = []
    for _ in range(2):
        labels = []
        for image, label in loader:
            assert isinstance(image, torch.Tensor) and image.shape == (10, 28, 28, 1)
            assert label.dtype == torch.int32
            labels += label.tolist()
        epochs.append(labels)
    assert epochs[0] == epochs[1] == [i % 10 for i in range(100)]  # file order
    # a loop left early: the next one starts a new epoch
    shuffled = ds.MnistDataset(mnist, usage="train").batch(10).to_torch(num_epochs=3)
    for _ in shuffled:
        break
    assert sum(1 for _ in shuffled) == 10
    assert sum(1 for _ in shuffled) == 10
    assert sum(1 for _ in shuffled) == 0  # three epochs delivered
    shuffled.close()
    # rows no op copied come as copies torch may write; uint32 labels (torch
    # has no uint32) as int64
    raw = ds.MnistDataset(mnist, usage="train", shuffle=False).skip(3).take(1).to_torch()
    image, label = next(iter(raw))
    image += 1
    assert label.dtype == torch.int64 and label.item() == 3
    raw.close()
    assert np.asarray(next(iter(ds.MnistDataset(mnist, usage="train", shuffle=False)))[0])[0, 0, 0] == 0


def test_tensor_from_array_and_item():
    t = sluice.Tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert t.shape == (2, 3) and t.dtype == "float64" and len(t) == 2 and t.size == 6
    assert np.array_equal(t.asnumpy(), np.arange(6).reshape(2, 3))
    assert sluice.Tensor(np.int64(7)).item() == 7
    assert repr(t) == "Tensor(shape=(2, 3), dtype=float64)"
    with pytest.raises(ValueError):
        sluice.Tensor(np.zeros(3, dtype=np.float16))
    with pytest.raises(ValueError):
        t.item()
    with pytest.raises(TypeError):
        len(sluice.Tensor(np.float32(1)))


def test_tensor_indexing_argmax_and_numbers():
    """What MindSpore users write on outputs: t[i], slices, t.argmax(axis),
    int(t), float(t); each gives a new tensor (a copy), as MindSpore's."""
    a = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], dtype=np.float32)
    t = sluice.Tensor(a)
    row = t[1]
    assert isinstance(row, sluice.Tensor) and row.shape == (3,)
    assert np.array_equal(row.asnumpy(), a[1])
    assert row.data_ptr() != t.data_ptr() + a.itemsize * 3     # a copy, not a view
    assert t[:, 1:].shape == (2, 2) and np.array_equal(t[:, 1:].asnumpy(), a[:, 1:])
    assert t[0, 1].shape == () and float(t[0, 1]) == pytest.approx(0.7)
    pred = t.argmax(axis=1)
    assert pred.dtype == "int32" and pred.asnumpy().tolist() == [1, 0]
    assert t.argmax().shape == () and int(t.argmax()) == 1
    assert t.argmax(1, keepdims=True).shape == (2, 1)
    labels = sluice.Tensor(np.array([1, 2], dtype=np.int32))
    assert (pred.asnumpy() == labels.asnumpy()).sum() == 1
    assert int(labels[1]) == 2 and [10, 20, 30][labels[1]] == 30    # __index__
    with pytest.raises(TypeError, match="float tensor cannot be an index"):
        [1, 2][t[0, 0]]
    with pytest.raises(ValueError, match="2 elements, not 1"):
        int(labels)
    with pytest.raises(IndexError):
        t[5]
