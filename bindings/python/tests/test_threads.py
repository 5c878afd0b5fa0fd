"""Threads: the pipeline's threads are gone (counted in /proc/self/task)
right after `break`, `del`, an exception in the loop, garbage collection,
close() and Ctrl-C; the GIL is free while __next__ waits; several Python
threads may share one iterator."""
import gc
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import sluice.dataset as ds
import sluice.dataset.vision as vision
from conftest import baseline, nthreads, settled


def pipeline(mnist, workers=2):
    d = ds.MnistDataset(mnist, usage="train")
    d = d.map([vision.Resize((32, 32)), vision.Rescale(1 / 255, 0)], input_columns="image",
              num_parallel_workers=workers)
    return d.repeat()  # endless: the threads never finish on their own


def gated(mnist, gate):
    """A pipeline whose rows wait (in a Python map operation, sleeping in
    short steps) until `gate` is set, or 10 s."""
    def wait(x):
        deadline = time.monotonic() + 10
        while not gate.is_set() and time.monotonic() < deadline:
            time.sleep(0.005)
        return x
    return ds.MnistDataset(mnist, usage="train").map(wait, num_parallel_workers=2).repeat()


def test_break(mnist):
    base = baseline()
    for _ in pipeline(mnist).create_tuple_iterator():
        assert nthreads() > base  # the pipeline runs threads...
        break
    assert settled(base) == base     # ...joined once the loop lets go of the iterator


def test_del_and_close(mnist):
    base = baseline()
    it = pipeline(mnist).create_dict_iterator()
    next(it)
    assert nthreads() > base
    del it
    assert settled(base) == base
    it = pipeline(mnist).create_tuple_iterator()
    next(it)
    it.close()
    assert settled(base) == base and it.get_stats()["running"] is False
    with pytest.raises(StopIteration):
        next(it)
    with pipeline(mnist).create_tuple_iterator() as it:
        next(it)
    assert settled(base) == base


def test_exception_inside_the_loop(mnist):
    base = baseline()

    def train():
        for image, label in pipeline(mnist).create_tuple_iterator():
            raise ValueError("the loss is NaN")
    with pytest.raises(ValueError):
        train()
    assert settled(base) == base


def test_garbage_collection(mnist):
    base = baseline()
    it = pipeline(mnist).create_tuple_iterator()
    next(it)
    cycle = [it]
    cycle.append(cycle)
    del it, cycle
    assert nthreads() > base  # only the collector can free the cycle
    gc.collect()
    assert settled(base) == base


def test_end_of_data_and_error_free_the_threads(mnist):
    base = baseline()
    it = ds.MnistDataset(mnist, usage="train").batch(10).create_tuple_iterator(num_epochs=1)
    assert sum(1 for _ in it) == 10
    assert settled(base) == base  # the iterator still exists; its threads do not
    it = (ds.MnistDataset(mnist, usage="train").map(lambda x: 1 / 0)
          .create_tuple_iterator(num_epochs=1))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        next(it)
    assert settled(base) == base


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_while_waiting(mnist):
    """SIGINT while __next__ waits for rows that do not come: KeyboardInterrupt
    within about the check interval (0.1 s), every thread joined. The
    handler opens the gate so the workers can finish the row they are in
    (a Python function cannot be interrupted from outside)."""
    base = baseline()
    gate = threading.Event()

    def on_sigint(signum, frame):
        gate.set()
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGINT, on_sigint)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        it = gated(mnist, gate).create_tuple_iterator()
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            next(it)
        waited = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGINT, old)
        timer.join()
    assert 0.25 < waited < 1.5
    assert settled(base) == base and it.get_stats()["running"] is False
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_in_the_loop_body(mnist):
    """SIGINT raised in the loop's body ends the loop with KeyboardInterrupt
    and joins the pipeline's threads. The test installs Python's own
    handler: an interpreter started with SIGINT ignored (a background job
    of a non-interactive shell, as in CI) would otherwise never see it.
    The loop is bounded, so a lost signal fails the test."""
    base = baseline()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    rows = 0
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in pipeline(mnist).create_tuple_iterator():
                rows += 1
                assert rows < 100, "SIGINT sent 99 times, no KeyboardInterrupt"
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)
    finally:
        signal.signal(signal.SIGINT, old)
    assert rows == 1  # the first signal ends the loop
    assert settled(base) == base


def wait_for_row(it):
    """next(it), in a frame of its own that another thread can recognise."""
    return next(it)


def test_gil_is_free_while_waiting(mnist):
    """Another Python thread runs while the main thread waits in __next__.
    The rows wait for a gate; the other thread counts the turns it gets
    while the main thread is inside wait_for_row (its top Python frame: the
    wait itself is in C) and opens the gate after 1000 of them. A __next__
    that held the GIL while waiting would give it no turn there: the rows
    would come only at the gate's own 10 s deadline and the count would
    stay at 0. Nothing here depends on how fast the machine is."""
    gate = threading.Event()
    me = threading.get_ident()
    turns = [0]

    def count():
        while not gate.is_set():
            frame = sys._current_frames().get(me)
            if frame is not None and frame.f_code is wait_for_row.__code__:
                turns[0] += 1
                if turns[0] >= 1000:
                    gate.set()
            time.sleep(0)  # a turn: let the others run
    it = gated(mnist, gate).create_tuple_iterator()
    t = threading.Thread(target=count)
    t.start()
    try:
        wait_for_row(it)
    finally:
        gate.set()
        t.join()
        it.close()
    assert turns[0] >= 1000, f"{turns[0]} turns while __next__ waited"


def test_threads_share_one_iterator(mnist):
    d = ds.MnistDataset(mnist, usage="train").map(vision.HWC2CHW(), num_parallel_workers=3)
    it = d.create_tuple_iterator(num_epochs=1)
    got = [[] for _ in range(4)]

    def consume(k):
        for image, label in it:
            got[k].append(int(np.asarray(image)[0, 0, 0]))
    threads = [threading.Thread(target=consume, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = sum(got, [])
    assert len(everything) == 100 and len(set(everything)) == 100


def test_close_from_another_thread(mnist):
    """close() wakes a __next__ waiting in another thread at once; it joins
    the threads once the row being made is done."""
    base = baseline()
    gate = threading.Event()
    it = gated(mnist, gate).create_tuple_iterator()
    closer = threading.Timer(0.2, it.close)
    closer.start()
    t0 = time.monotonic()
    with pytest.raises(StopIteration):
        next(it)
    assert time.monotonic() - t0 < 2.0
    gate.set()
    closer.join()
    assert settled(base) == base


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_close_between_two_waits(mnist):
    """close() landing while __next__ is between two SIGNAL_CHECK_MS waits
    (here: in a signal handler, run there) still wakes it at once: close()
    does not join the threads under the lock __next__ takes next."""
    gate = threading.Event()
    it = gated(mnist, gate).create_tuple_iterator()
    old = signal.signal(signal.SIGALRM, lambda *a: time.sleep(0.3))
    closer = threading.Timer(0.2, it.close)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # the handler runs at the 0.1 s wake-up
        closer.start()
        t0 = time.monotonic()
        with pytest.raises(StopIteration):
            next(it)
        assert time.monotonic() - t0 < 2.0
    finally:
        signal.signal(signal.SIGALRM, old)
        gate.set()
        closer.join()
