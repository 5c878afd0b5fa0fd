"""sluice.train.callback: what training calls back, as ``mindspore.train.callback``.

:class:`LossMonitor`, :class:`TimeMonitor` and :class:`ModelCheckpoint` run
in C (their lines go to ``sys.stdout``); subclass :class:`Callback` (or
give any object with the same methods) to run Python at the hooks. Without
data sinking the step hook runs after every step; with it, once per sink,
as in MindSpore.
"""
import operator
import os

__all__ = ["Callback", "RunContext", "CallbackParam", "LossMonitor", "TimeMonitor",
           "ModelCheckpoint", "CheckpointConfig"]


class CallbackParam(dict):
    """What the hooks see, MindSpore's ``cb_params``: a dict whose keys are
    also attributes.

    Keys: ``train_network`` (the network), ``epoch_num``, ``batch_num``
    (steps per epoch: ``sink_size`` when it is > 0 in sink mode, else the
    dataset's size; -1 when endless), ``cur_epoch_num`` (from 1),
    ``cur_step_num`` (steps of this ``train`` call so far),
    ``cur_step_in_epoch``, ``net_outputs`` (the last step's loss, a 0-d
    :class:`sluice.Tensor`; None before the first step), ``dataset_sink_mode``,
    ``step_time_ms`` (the last step; in sink mode the sink's mean) and
    ``epoch_time_ms`` (the epoch so far).
    """

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value


class RunContext:
    """Handed to every hook: :meth:`original_args` gives the
    :class:`CallbackParam`; :meth:`request_stop` ends training after the
    current step (or sink)."""

    def __init__(self, original_args):
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self):
        """The :class:`CallbackParam` of this training."""
        return self._original_args

    def request_stop(self):
        """Asks training to stop once the hook returns."""
        self._stop_requested = True

    def get_stop_requested(self):
        """Whether :meth:`request_stop` was called."""
        return self._stop_requested


class Callback:
    """The base of Python callbacks: override the hooks you need, each taking
    a :class:`RunContext`.

    MindSpore's names work both ways: ``on_train_begin``,
    ``on_train_epoch_begin``, ``on_train_step_end``, ``on_train_epoch_end``
    and ``on_train_end`` call ``begin``, ``epoch_begin``, ``step_end``,
    ``epoch_end`` and ``end``, which do nothing. An exception raised in a
    hook stops training and leaves ``Model.train`` as it is. (sluice has no
    step_begin hook: the C loop sinks whole runs of steps.)
    """

    def begin(self, run_context):
        """Before the first epoch."""

    def epoch_begin(self, run_context):
        """Before each epoch."""

    def step_end(self, run_context):
        """After each step (each sink in sink mode)."""

    def epoch_end(self, run_context):
        """After each epoch."""

    def end(self, run_context):
        """After the last epoch (not after an error)."""

    def on_train_begin(self, run_context):
        """MindSpore 2's name of :meth:`begin`."""
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        """MindSpore 2's name of :meth:`epoch_begin`."""
        self.epoch_begin(run_context)

    def on_train_step_end(self, run_context):
        """MindSpore 2's name of :meth:`step_end`."""
        self.step_end(run_context)

    def on_train_epoch_end(self, run_context):
        """MindSpore 2's name of :meth:`epoch_end`."""
        self.epoch_end(run_context)

    def on_train_end(self, run_context):
        """MindSpore 2's name of :meth:`end`."""
        self.end(run_context)


_HOOKS = (("on_train_begin", "begin"), ("on_train_epoch_begin", "epoch_begin"),
          ("on_train_step_end", "step_end"), ("on_train_epoch_end", "epoch_end"),
          ("on_train_end", "end"))


class _Hooks:
    """A Python callback as the C library calls it: fn(hook, epoch,
    epoch_num, global_step, step_in_epoch, steps_per_epoch, loss, step_ms,
    epoch_ms) -> stop?"""

    def __init__(self, callback, cb_params, run_context, start_step, after=None):
        self._methods = [getattr(callback, new, None) or getattr(callback, old, None)
                         for new, old in _HOOKS]
        if not any(callable(m) for m in self._methods):
            raise TypeError(f"callbacks: {type(callback).__name__} has none of the hooks "
                            f"({', '.join(new for new, _ in _HOOKS)})")
        self._params = cb_params
        self._run_context = run_context
        self._start_step = start_step
        self._after = after    # run after each hook the callback has

    def __call__(self, hook, epoch, epoch_num, global_step, step_in_epoch, steps_per_epoch,
                 loss, step_ms, epoch_ms):
        method = self._methods[hook]
        if method is not None:
            p = self._params
            p.cur_epoch_num = epoch
            p.epoch_num = epoch_num
            p.cur_step_num = global_step - self._start_step
            p.cur_step_in_epoch = step_in_epoch
            p.batch_num = steps_per_epoch
            p.step_time_ms = step_ms
            p.epoch_time_ms = epoch_ms
            if p.cur_step_num > 0:
                p.net_outputs = _loss_tensor(loss)
            try:
                method(self._run_context)
            finally:
                if self._after is not None:
                    self._after()
        return self._run_context.get_stop_requested()


def _loss_tensor(loss):
    import numpy as np
    from sluice import Tensor
    return Tensor(np.array(loss, dtype=np.float32))


class _BuiltIn(Callback):
    """A callback the C library runs from what its _spec() says: its hooks
    are not called from Python."""


class LossMonitor(_BuiltIn):
    """Prints ``epoch: 1 step: 1875, loss is 0.57987154`` (the loss as numpy
    prints a float32) when the step in the epoch is a multiple of
    ``per_print_times`` (default 1: every step; with data sinking, every
    sink). 0 prints nothing."""

    def __init__(self, per_print_times=1):
        per_print_times = operator.index(per_print_times)
        if per_print_times < 0:
            raise ValueError(f"LossMonitor: per_print_times must be >= 0, got {per_print_times}")
        self.per_print_times = per_print_times

    def _spec(self):
        return ("loss_monitor", self.per_print_times, False)


class TimeMonitor(_BuiltIn):
    """Prints ``epoch time: 1843.522 ms, per step time: 0.983 ms`` at the
    end of each epoch (per step: the epoch's time over the steps it ran).

    Args:
        data_size (int): as MindSpore's, the steps per epoch to divide by
            when training does not know them (None or >= 1). sluice's
            training always knows them, so, as MindSpore does then, the
            steps the epoch ran are used.
    """

    def __init__(self, data_size=None):
        if data_size is not None:
            data_size = operator.index(data_size)
            if data_size < 1:
                raise ValueError(f"TimeMonitor: data_size must be >= 1 or None, got {data_size}")
        self.data_size = data_size

    def _spec(self):
        return ("time_monitor",)


class CheckpointConfig:
    """When :class:`ModelCheckpoint` saves and what it keeps.

    Args:
        save_checkpoint_steps (int or None): save every this many steps
            (default 1; with data sinking, at the sink ends that crossed a
            multiple); None: at the end of each epoch. Either way also at
            the end of the run, unless its last step was just saved.
        keep_checkpoint_max (int): keep the newest this many files of the
            prefix in the folder, earlier runs' too (default 5; 0: all).
    """

    def __init__(self, save_checkpoint_steps=1, keep_checkpoint_max=5):
        if save_checkpoint_steps is not None:
            save_checkpoint_steps = operator.index(save_checkpoint_steps)
            if save_checkpoint_steps < 1:
                raise ValueError("CheckpointConfig: save_checkpoint_steps must be >= 1 or None, "
                                 f"got {save_checkpoint_steps}")
        keep_checkpoint_max = operator.index(keep_checkpoint_max)
        if keep_checkpoint_max < 0:
            raise ValueError("CheckpointConfig: keep_checkpoint_max must be >= 0, "
                             f"got {keep_checkpoint_max}")
        self.save_checkpoint_steps = save_checkpoint_steps
        self.keep_checkpoint_max = keep_checkpoint_max


class ModelCheckpoint(_BuiltIn):
    """Saves the parameters to ``directory/<prefix>-<epoch>_<step>.ckpt`` as
    ``config`` says (:class:`CheckpointConfig`; default: every step, the
    newest 5 kept). The folder is made when first needed; each file is
    written to a temporary name and renamed into place, and such names that
    saves killed midway left go when a run begins. Read them back with
    :func:`sluice.load_checkpoint`.

    Args:
        prefix (str): the files' prefix (default ``"CKP"``).
        directory (str or path): the folder (default: the current one).
        config (CheckpointConfig): default ``CheckpointConfig()``.
    """

    def __init__(self, prefix="CKP", directory=None, config=None):
        if not isinstance(prefix, str) or not prefix or "/" in prefix:
            raise ValueError(f"ModelCheckpoint: prefix must be a file name, got {prefix!r}")
        if config is None:
            config = CheckpointConfig()
        if not isinstance(config, CheckpointConfig):
            raise TypeError("ModelCheckpoint: config must be a CheckpointConfig")
        self.prefix = prefix
        self.directory = os.fspath(directory) if directory is not None else "."
        self.config = config

    def _spec(self):
        steps = self.config.save_checkpoint_steps
        return ("checkpoint", self.directory, self.prefix, 0 if steps is None else steps,
                self.config.keep_checkpoint_max)
