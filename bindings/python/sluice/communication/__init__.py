"""sluice.communication: training across processes, as
``mindspore.communication``: :func:`init`, :func:`get_rank`,
:func:`get_group_size` and :func:`release` (also in
:mod:`sluice.communication.management`). A MindSpore data-parallel script
runs under ``mpirun`` with these lines::

    from sluice.communication import init, get_rank, get_group_size

    init()
    sluice.set_auto_parallel_context(parallel_mode="data_parallel", gradients_mean=True)
    d = ds.MnistDataset(path, num_shards=get_group_size(), shard_id=get_rank())

    mpirun -np 2 /usr/bin/python3 script.py
"""
from sluice.communication import management
from sluice.communication.management import get_group_size, get_rank, init, release

__all__ = ["init", "release", "get_rank", "get_group_size", "management"]
