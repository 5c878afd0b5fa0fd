"""Shared ground of the Python bindings' tests: small MNIST and ImageFolder
trees written per test (the same pixels as the C tests' tests/testutil.c),
and a count of sluice's threads in this process.

run_pytest.sh (make check) puts the staged package on PYTHONPATH and names
the helper programs in the environment."""
import gc
import gzip
import os
import struct
import subprocess
import time

import numpy as np
import pytest

# In a sanitizer build run_pytest.sh preloads the sanitizer's runtime into
# this interpreter. The C programs the tests start link it themselves, and
# some are libtool's shell wrappers, which TSan's runtime, preloaded into
# the shell, crashes: only child interpreters get it back (python_env).
PRELOAD = os.environ.pop("LD_PRELOAD", None)

FASHION = "/usr/share/datasets/fashion-mnist"
TRAIN_IMAGES = "train-images-idx3-ubyte"
TRAIN_LABELS = "train-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"


def pixels(first, n, h=28, w=28):
    """Images first .. first+n-1 as tests/testutil.c's tu_pixel makes them:
    (i * 31 + y * 7 + x * 13) mod 256, uint8 (n, h, w)."""
    i = np.arange(first, first + n, dtype=np.int64)[:, None, None]
    y = np.arange(h, dtype=np.int64)[None, :, None]
    x = np.arange(w, dtype=np.int64)[None, None, :]
    return ((i * 31 + y * 7 + x * 13) & 0xFF).astype(np.uint8)


def labels(first, n):
    """tu_label: i % 10."""
    return (np.arange(first, first + n) % 10).astype(np.uint8)


def write_file(path, data, gz=False):
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return str(path)


def idx3(magic, n, h, w, body):
    return struct.pack(">IIII", magic, n, h, w) + bytes(body)


def idx1(magic, n, body):
    return struct.pack(">II", magic, n) + bytes(body)


def make_mnist(root, n_train, n_test=1, gz=False):
    """An MNIST folder: train samples 0.., test samples n_train.. (tu_make_mnist)."""
    os.makedirs(root, exist_ok=True)
    ext = ".gz" if gz else ""
    write_file(os.path.join(root, TRAIN_IMAGES + ext),
               idx3(0x803, n_train, 28, 28, pixels(0, n_train).tobytes()), gz)
    write_file(os.path.join(root, TRAIN_LABELS + ext),
               idx1(0x801, n_train, labels(0, n_train).tobytes()), gz)
    write_file(os.path.join(root, TEST_IMAGES + ext),
               idx3(0x803, n_test, 28, 28, pixels(n_train, n_test).tobytes()), gz)
    write_file(os.path.join(root, TEST_LABELS + ext),
               idx1(0x801, n_test, labels(n_train, n_test).tobytes()), gz)
    return str(root)


@pytest.fixture
def mnist(tmp_path):
    """A plain MNIST folder of 100 train and 20 test samples."""
    return make_mnist(tmp_path / "mnist", 100, 20)


@pytest.fixture
def make_image_folder(tmp_path):
    """make_image_folder(nclasses, per_class, w, h) -> the folder's path
    (class_<k>/img_<j>.jpg, as tu_make_image_folder writes them)."""
    prog = os.environ.get("SLUICE_TEST_MAKE_IMAGE_FOLDER")
    if not prog or not os.path.exists(prog):
        pytest.skip("SLUICE_TEST_MAKE_IMAGE_FOLDER is not set (run through make check)")
    count = [0]

    def make(nclasses, per_class, w, h):
        count[0] += 1
        root = str(tmp_path / f"images{count[0]}")
        subprocess.run([prog, root, str(nclasses), str(per_class), str(w), str(h)], check=True)
        return root
    return make


def fashion_or_fail():
    """The Fashion-MNIST folder. The README's test command installs it: a
    test that needs the real files fails without them, naming the package,
    rather than pass untested."""
    if not os.path.exists(os.path.join(FASHION, TRAIN_IMAGES + ".gz")):
        pytest.fail(f"{FASHION} is not installed: apt-get install -y dataset-fashion-mnist "
                    "(the README's test command does)")
    return FASHION


def pytest_configure(config):
    config.addinivalue_line("markers", "long: an end-to-end run of many steps, checked for "
                            "its results; skipped under a sanitizer (the plain build runs it)")


def pytest_collection_modifyitems(config, items):
    """Under a sanitizer the long runs are skipped: they check results the
    plain build checks, and a sanitizer slows them tenfold. What the
    sanitizers are for (threads, the GIL, memory handed to numpy and torch,
    errors, stops) runs in the short tests, and the C suites run the
    training paths sanitized."""
    if not PRELOAD:
        return
    skip = pytest.mark.skip(reason="long run, skipped under a sanitizer (the plain build runs it)")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


def python_env(**extra):
    """The environment for a child Python interpreter that imports sluice:
    this one's, the sanitizer runtime preloaded again if it was, no
    bytecode written, and extra."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **extra)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    return env


def nthreads():
    """sluice's threads in this process: those the kernel lists under a name
    starting with "sl-" (every thread the library starts names itself so).
    Other threads (the interpreter's, TSan's, OpenBLAS's, a test's timer)
    come and go on their own schedule and are not counted."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith("sl-"):
                    n += 1
        except (FileNotFoundError, ProcessLookupError):
            pass  # ended between the listing and the read
    return n


def baseline():
    """sluice's thread count before a test starts anything. Garbage an
    earlier test left (an iterator or Model in a reference cycle, whose
    threads a later gc.collect() would join) is collected first, so the
    count cannot fall under the test's feet; then the count is read until
    it holds still for 10 ms (a thread just joined leaves the kernel's list
    a moment after pthread_join returns)."""
    gc.collect()
    n = nthreads()
    for _ in range(100):
        time.sleep(0.01)
        m = nthreads()
        if m == n:
            return n
        n = m
    return n


def settled(base):
    """sluice's thread count, given up to 1 s to come down to base: a joined
    thread may still be listed for a moment after pthread_join returns. The
    pipelines the tests stop never end on their own, so only a join brings
    the count down."""
    deadline = time.monotonic() + 1.0
    n = nthreads()
    while n > base and time.monotonic() < deadline:
        time.sleep(0.005)
        n = nthreads()
    return n


# --- shared by test_trace.py and test_custom_loop.py --------------------------------------

def loss_cell():
    """The seeds' loss: SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")."""
    import sluice.nn as nn
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def values(network):
    """{parameter name: values} of a network, in its order."""
    return {p.name: p.asnumpy() for p in network.trainable_params()}


def assert_same(a, b):
    """The same parameter names in the same order, with equal values bit for bit."""
    assert list(a) == list(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), f"{name} differs"
