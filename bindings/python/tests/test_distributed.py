"""Training across processes from Python: `mpirun -np 2` on the examples.
distributed_lenet.py prints once (rank 0) and its two ranks end with the
same parameters, byte for byte, though each read its own shard; rank 1
failing before training (its data folder missing) while rank 0 waits in
the training ends the job, non-zero, at once; a dataset read whole by
every rank draws one warning; torch_ddp_backend.py trains torch's DDP on
sluice shards. The settings' errors run in this process.

The mpirun tests skip only when sluice was built without MPI; MPI built
and no mpirun fails. Under a sanitizer the ranks get its runtime preloaded
(mpirun itself does not: -x LD_PRELOAD), and under ThreadSanitizer the
reports from inside Open MPI are suppressed, as tests/mpi_test.sh does,
and in the DDP example those from inside torch (gloo's threads, not built
with TSan)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import _sluice, train
from sluice.communication import get_rank, init
from conftest import PRELOAD, make_mnist, python_env
from test_shared_params import SmallNet

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
LIMIT = 150  # seconds an mpirun may take; each test's own limit is longer

# Reports from inside Open MPI (its locks and progress threads, not built
# with TSan) are not sluice's (the lists are tests/mpi_test.sh's).
MPI_LIBS = ("libmpi.so", "libopen-pal.so", "libopen-rte.so", "libpmix.so", "libevent",
            "libhwloc", "mca_")
MPI_CALLERS = ("libmpi.so", "libopen-pal.so", "libopen-rte.so", "libevent_core",
               "libevent_pthreads", "libhwloc.so")


def tsan_options(tmp_path, libs, callers=()):
    """Under ThreadSanitizer, {"TSAN_OPTIONS": ...} for a child, with the
    reports from inside libs suppressed; otherwise {}."""
    if not PRELOAD or "tsan" not in PRELOAD:
        return {}
    supp = tmp_path / "tsan.supp"
    supp.write_text("".join(f"{kind}:{lib}\n" for lib in libs for kind in
                            ("race", "deadlock", "mutex", "signal", "thread")) +
                    "".join(f"called_from_lib:{lib}\n" for lib in callers))
    return {"TSAN_OPTIONS": f"suppressions={supp}:" + os.environ.get("TSAN_OPTIONS", "")}


@pytest.fixture(autouse=True)
def stand_alone():
    sluice.reset_auto_parallel_context()
    yield
    sluice.reset_auto_parallel_context()


@pytest.fixture
def mpirun(tmp_path):
    """mpirun(app, ...) -> (status, stdout, stderr) of `mpirun app : app ...`,
    each app a list ["-np", "N", program, args...]."""
    if _sluice.distributed_mpi() is None:
        pytest.skip(f"sluice cannot train across processes: it was "
                    f"{_sluice.distributed_why_not()}")
    program = shutil.which("mpirun")
    if not program:
        pytest.fail("sluice is built with MPI but mpirun is not on PATH "
                    "(apt-get install -y openmpi-bin)")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               **tsan_options(tmp_path, MPI_LIBS, MPI_CALLERS))
    # (-x holds for its own app of an "A : B" command line only)
    preload = ["-x", f"LD_PRELOAD={PRELOAD}"] if PRELOAD else []

    def run(*apps):
        args = [arg for k, app in enumerate(apps) for arg in [":"][:k] + preload + app]
        p = subprocess.Popen([program, "--allow-run-as-root", "--oversubscribe"] + args,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            p.terminate()           # mpirun ends its ranks
            try:
                p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
            pytest.fail(f"mpirun {' '.join(args)}: still running after {LIMIT} s")
        return p.returncode, out, err
    return run


def lenet(*args):
    return [sys.executable, os.path.join(EXAMPLES, "distributed_lenet.py"), *args]


@pytest.mark.timeout(200)
def test_two_ranks_print_once_and_agree(mpirun, tmp_path):
    data = make_mnist(tmp_path / "m", 320)   # 160 samples, 5 batches a rank
    rc, out, err = mpirun(["-np", "2"] + lenet("--data", data, "--epochs", "2",
                                               "--sink-size", "20", "--save", str(tmp_path)))
    assert rc == 0, err
    assert out.count("Starting Training") == 1, out
    assert re.findall(r"^epoch: (\d) step: 20, loss is", out, re.M) == ["1", "2"], out
    assert "warning" not in err, err
    with open(tmp_path / "lenet_rank0.ckpt", "rb") as f0, \
            open(tmp_path / "lenet_rank1.ckpt", "rb") as f1:
        assert f0.read() == f1.read(), "the ranks' parameters differ"


@pytest.mark.timeout(200)
def test_rank_failing_outside_training_ends_the_job(mpirun, tmp_path):
    data = make_mnist(tmp_path / "m", 320)
    start = time.monotonic()
    rc, out, err = mpirun(["-np", "1"] + lenet("--data", data, "--epochs", "1000"),
                          ["-np", "1"] + lenet("--data", str(tmp_path / "missing")))
    assert rc != 0, out
    assert "FileNotFoundError" in err and "rank 1: ending every rank of the job" in err, err
    assert time.monotonic() - start < LIMIT


DRIVER = """
import sys
import sluice, sluice.dataset as ds, sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
from sluice import nn, train
from sluice.communication import get_group_size, get_rank, init, release
init()
sluice.set_auto_parallel_context(parallel_mode="data_parallel", device_num=get_group_size())
d = ds.MnistDataset(sys.argv[1], usage="train")     # every rank reads it whole
d = d.map(transforms.TypeCast(sluice.int32), input_columns="label")
d = d.map([vision.Resize((32, 32)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()],
          input_columns="image").batch(32, drop_remainder=True)
net = nn.LeNet5(10)
model = train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                    nn.Momentum(net.trainable_params(), 0.01, 0.9))
model.train(1, d, callbacks=[train.LossMonitor()])
print(f"rank {get_rank()} leaves")
release()                                           # flushes stdout first
try:
    get_rank()
    sys.exit(3)
except RuntimeError:
    pass
"""


@pytest.mark.timeout(200)
def test_unsharded_dataset_warns_once(mpirun, tmp_path):
    data = make_mnist(tmp_path / "m", 96)   # 3 batches, the same on both ranks
    rc, out, err = mpirun(["-np", "2", sys.executable, "-c", DRIVER, data])
    assert rc == 0, err
    assert len(re.findall(r"^epoch: 1 step: \d, loss is", out, re.M)) == 3, out
    # (lines that two ranks write at once may come out run together)
    assert sorted(re.findall(r"rank \d leaves", out)) == ["rank 0 leaves", "rank 1 leaves"], out
    assert err.count("sluice: warning: train: the dataset's source is in 1 shard(s) for "
                     "2 ranks") == 1, err


@pytest.mark.long  # torch's DDP is not sluice's code; test_zero_copy sanitizes the hand-over
@pytest.mark.timeout(200)
def test_torch_ddp_backend(tmp_path):
    pytest.importorskip("torch")
    data = make_mnist(tmp_path / "m", 320)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "torch_ddp_backend.py"),
                        "--data", data, "--steps", "12", "--print-every", "6",
                        "--timeout", "120"],
                       capture_output=True, text=True, timeout=LIMIT,
                       env=python_env(**tsan_options(tmp_path, ("libtorch_cpu.so", "libc10.so"))))
    assert p.returncode == 0, p.stderr
    assert re.findall(r"^step (\d+), loss is", p.stdout, re.M) == ["6", "12"], p.stdout
    assert "2 ranks, 12 steps each: the same parameters" in p.stdout


def test_settings_and_their_errors(mnist):
    assert sluice.get_auto_parallel_context("parallel_mode") == "stand_alone"
    sluice.set_auto_parallel_context(parallel_mode=sluice.ParallelMode.DATA_PARALLEL,
                                     gradients_mean=True, device_num=2)
    assert sluice.get_auto_parallel_context("device_num") == 2
    for bad, why in [({"parallel_mode": "semi_auto_parallel"}, "one parallel mode is "
                      "data_parallel"), ({"gradients_mean": False}, "always averages"),
                     ({"device_num": 0}, r"\[1, 4096\]"), ({"full_batch": True}, "no setting")]:
        with pytest.raises(ValueError, match=why):
            sluice.set_auto_parallel_context(**bad)
    assert sluice.get_auto_parallel_context("device_num") == 2   # left as it was
    d = ds.MnistDataset(mnist, usage="train")
    d = d.map(transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map([vision.Resize((32, 32)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()],
              input_columns="image").batch(32, drop_remainder=True)
    net = nn.LeNet5(10)
    loss, opt = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), \
        nn.Momentum(net.trainable_params(), 0.01, 0.9)
    with pytest.raises(RuntimeError, match="call sluice.communication.init"):
        train.Model(net, loss, opt).train(1, d)
    with pytest.raises(ValueError, match="data_parallel in Model.train only"):
        sluice.data_sink(nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt), d)
    # a train_step in a plain loop would train this rank alone: refused too
    own = SmallNet()
    own_opt = nn.SGD(own.trainable_params(), 0.01)
    grad_fn = sluice.value_and_grad(lambda x, y: loss(own(x), y), None, own.trainable_params())
    batch = next(d.create_tuple_iterator())
    with pytest.raises(ValueError, match="a train_step in a plain loop: sluice trains "
                                         "data_parallel in Model.train only"):
        _, grads = grad_fn(*batch)
        own_opt(grads)
    sluice.set_auto_parallel_context(parallel_mode="stand_alone")
    assert sluice.get_auto_parallel_context("device_num") is None
    with pytest.raises(RuntimeError, match="init: (this process was not started by mpirun|"
                       "sluice cannot train across processes)"):
        init()
    with pytest.raises(RuntimeError, match="has not joined"):
        get_rank()
    with pytest.raises(ValueError, match="no backend 'nccl'"):
        init("nccl")
