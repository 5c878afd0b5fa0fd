"""sluice.communication.management: the job's ranks, as
``mindspore.communication.management``.

Every process of ``mpirun -np N python3 script.py`` calls :func:`init` to
join the job (Open MPI, through libsluice); :func:`get_rank` (0 .. N-1)
and :func:`get_group_size` (N) then say which part of the data it reads.
With ``sluice.set_auto_parallel_context(parallel_mode="data_parallel")``
``Model.train`` averages the ranks' gradients after every step, so every
rank holds the same parameters.

The process leaves the job at exit (or at :func:`release`). One that exits
on an unhandled exception leaves it as failed: when the other ranks may be
waiting for it (it failed outside a training, which would have told them),
the whole job ends (MPI_Abort) rather than wait for ever.
"""
import atexit
import sys

from sluice import _sluice

__all__ = ["init", "release", "get_rank", "get_group_size"]

_state = {"hooked": False, "failed": False}


def _leave(failed):
    # What the process printed goes out before it leaves: Python's own
    # flush at exit comes after atexit, and MPI promises nothing of a
    # process after MPI_Finalize.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    _sluice.distributed_finalize(failed)


def _at_exit():
    _leave(_state["failed"])


def _hook():
    """Leaves the job at exit, as failed after an unhandled exception."""
    if _state["hooked"]:
        return
    _state["hooked"] = True
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        _state["failed"] = True
        previous(exc_type, exc, tb)
    sys.excepthook = excepthook
    atexit.register(_at_exit)


def init(backend_name=None):
    """Joins this process to the job's ranks (once is enough: later calls
    do nothing).

    Args:
        backend_name (str): None (or ``"mpi"``): sluice's ranks talk over
            Open MPI whatever the device; MindSpore's ``"hccl"``,
            ``"nccl"`` and ``"mccl"`` raise ValueError.

    RuntimeError when this sluice was built without MPI (saying how to
    build it with), when the process was not started by ``mpirun``, or
    when MPI cannot start.
    """
    if backend_name not in (None, "mpi"):
        raise ValueError(f"init: sluice's ranks talk over Open MPI; there is no backend "
                         f"{backend_name!r} (call init() without one)")
    if _sluice.distributed_initialized():
        return
    why = _sluice.distributed_why_not()
    if why is not None:
        raise RuntimeError(f"init: sluice cannot train across processes: it was {why}")
    if not _sluice.distributed_launched():
        script = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c") else "script.py"
        raise RuntimeError(f"init: this process was not started by mpirun, so it has no "
                           f"ranks to join; start every rank with it: mpirun -np 2 "
                           f"{sys.executable or 'python3'} {script}")
    try:
        _sluice.distributed_init()
    except RuntimeError as e:
        raise RuntimeError(f"init: {e}") from None
    _hook()


def release():
    """Leaves the job now (MPI_Finalize, which waits for every rank to
    leave), once stdout and stderr are flushed. sluice cannot join again
    in this process."""
    _leave(False)


def _joined(what, group):
    if group is not None:
        raise ValueError(f"{what}: sluice has one group, the job's ranks: leave group out, "
                         f"got {group!r}")
    if not _sluice.distributed_initialized():
        raise RuntimeError(f"{what}: this process has not joined the job's ranks (call "
                           f"sluice.communication.init() first, under mpirun) or has left "
                           f"them (release())")


def get_rank(group=None):
    """This process's rank, 0 to :func:`get_group_size` - 1."""
    _joined("get_rank", group)
    return _sluice.distributed_rank()


def get_group_size(group=None):
    """The job's ranks (``mpirun -np N``: N)."""
    _joined("get_group_size", group)
    return _sluice.distributed_size()
