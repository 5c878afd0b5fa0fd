"""sluice.train.model: Model, as ``mindspore.train.Model``, and its metrics."""
import operator
import re
import sys

from sluice import _sluice, context, nn
from sluice.nn.metrics import Accuracy, Loss
from sluice.train.callback import CallbackParam, RunContext, _BuiltIn, _Hooks

__all__ = ["Model", "Accuracy", "Loss"]


_METRIC_NAMES = {"accuracy": "accuracy", "acc": "accuracy", "loss": "loss"}


def _metrics(metrics):
    """{name: "accuracy" | "loss"} from a set of names or a dict of metrics."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        items = metrics.items()
    elif isinstance(metrics, (set, frozenset, list, tuple)):
        items = [(name, name) for name in metrics]
    else:
        raise TypeError("Model: metrics must be a set of names ({'accuracy'}) or a dict "
                        "{name: metric}")
    out = {}
    for name, metric in items:
        kind = getattr(metric, "_kind", None)
        if kind is None and isinstance(metric, str):
            kind = _METRIC_NAMES.get(metric.lower())
        if kind is None:
            raise ValueError(f"Model: unknown metric {metric!r} (sluice has 'accuracy' and "
                             "'loss', or Accuracy() and Loss())")
        out[name] = kind
    return out


def _check_shards(dataset):
    """One line on rank 0 when the dataset's source is not split in as many
    shards as the job has ranks: every rank would read the same samples
    (its description names the shards: "sampler(..., shard 1 of 2, ...)")."""
    source = dataset._c.describe().split("\n", 1)[0]
    found = re.search(r"shard \d+ of (\d+)", source)
    shards, ranks = int(found.group(1)) if found else 1, _sluice.distributed_size()
    if shards != ranks and _sluice.distributed_rank() == 0:
        print(f"sluice: warning: train: the dataset's source is in {shards} shard(s) for "
              f"{ranks} ranks, so ranks read the same samples; give it num_shards="
              f"get_group_size(), shard_id=get_rank()", file=sys.stderr, flush=True)


def _int(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None


class Model:
    """A network with its loss and optimizer, compiled into a C model that
    trains and evaluates, as ``mindspore.train.Model``.

    Args:
        network: a :class:`sluice.nn.LeNet5` (or a
            :class:`~sluice.nn.TrainOneStepCell` holding the rest).
        loss_fn: :class:`sluice.nn.SoftmaxCrossEntropyWithLogits` (sparse,
            mean), or None for a model that only evaluates accuracy.
        optimizer: :class:`sluice.nn.Momentum` or :class:`~sluice.nn.SGD`
            over ``network.trainable_params()``; None: the model cannot train.
        metrics: what :meth:`eval` returns: a set of names (``{"accuracy"}``,
            ``{"accuracy", "loss"}``) or a dict ``{name: Accuracy() or Loss()}``.

    The model is compiled now, with :func:`sluice.set_context`'s mode and
    device and the network's seed; its executor's threads live as long as
    it does. The network's parameters are one truth, whatever the number
    of Models over it: each Model takes their current values before it
    trains, evaluates or saves, and after each hook of a callback of its
    own training (which may have used another Model over the network), so
    two Models never compute on divergent copies. The optimizer's
    accumulators (Momentum's) move with it the same way; a new optimizer's
    start at zero.
    Training and evaluation run in C without the GIL; Ctrl-C stops them
    (KeyboardInterrupt) after joining every thread they started.
    """

    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None):
        if isinstance(network, nn.TrainOneStepCell):
            if loss_fn is not None or optimizer is not None:
                raise ValueError("Model: a TrainOneStepCell brings its loss and optimizer")
            network, loss_fn, optimizer = (network.network.backbone, network.network.loss_fn,
                                           network.optimizer)
        traced = nn._is_traced(network)
        if not isinstance(network, nn.LeNet5) and not traced:
            raise TypeError(f"Model: network must be a sluice.nn network (LeNet5, or a Cell "
                            f"with a construct), got {type(network).__name__}")
        if loss_fn is not None and not isinstance(loss_fn, nn.SoftmaxCrossEntropyWithLogits):
            raise TypeError("Model: loss_fn must be SoftmaxCrossEntropyWithLogits")
        if loss_fn is not None and not traced and not loss_fn.sparse:
            raise ValueError("Model: the built-in LeNet5 is compiled with the sparse mean loss "
                             "(SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))")
        if optimizer is not None:
            if not isinstance(optimizer, nn.Optimizer):
                raise TypeError("Model: optimizer must be a sluice.nn optimizer (Momentum, SGD)")
            mine = {id(p) for p in network.trainable_params()}
            if (optimizer._net is not network) if not traced else \
                    {id(p) for p in optimizer.parameters} != mine:
                raise ValueError("Model: the optimizer's parameters are another network's")
        self._metrics = _metrics(metrics)
        if "loss" in self._metrics.values() and loss_fn is None:
            raise ValueError("Model: the 'loss' metric needs a loss_fn")
        kind, lr, momentum = optimizer._c_args() if optimizer else ("momentum", 0.01, 0.9)
        self.network = network
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self._owned = None
        if traced:
            self._c = None    # traced when the first dataset gives the input shapes
            return
        self._c = _sluice.Model(
            network="lenet", num_classes=network.num_class, channels=network.num_channel,
            batch=network.batch_size, optimizer=kind, learning_rate=lr, momentum=momentum,
            seed=network._seed, mode=context.get_context("mode"),
            device_target=context.get_context("device_target"),
            device_id=context.get_context("device_id"),
            save_graphs=context.get_context("save_graphs"),
            save_graphs_path=context.get_context("save_graphs_path"))
        self._claim()

    def _ensure(self, dataset, what):
        """Compiles a network of the user's (tracing it with the dataset's
        shapes) if it is not yet; makes the model hold the parameters."""
        if self._c is None:
            from sluice.train.tracing import trace_network
            self._c, self._owned = trace_network(self.network, self.loss_fn, self.optimizer,
                                                 dataset, what)
        self._claim()

    def _claim(self):
        """Makes the C model hold the network's latest parameter values
        (and the optimizer's accumulators), wherever they are now: another
        Model over the same network may have taken them since, even from a
        callback of this model's training. Every C call of the model is
        preceded by this, so no model computes on a stale copy."""
        from sluice.train.tracing import claim, claim_moments
        if self._owned is not None:
            claim(self._c, self._owned, self.optimizer)
        elif self._c is not None:
            if self.network._owner is not self._c:
                self.network._adopt(self._c)
            names = [name for name, _, _ in self.network._params()]
            claim_moments(self._c, self.optimizer, {name: name for name in names})

    def _check_dataset(self, dataset, what, exact_batch, needs_end=False):
        """ValueError unless dataset's rows hold the network's image and label
        (feed_columns) as far as its description tells (sizes known only with data pass),
        and an epoch holds a batch and, when needs_end, ends."""
        from sluice.train.tracing import check_epoch, feed_columns
        check_epoch(dataset, what, needs_end)
        names = dataset.get_col_names()
        image_col, label_col = feed_columns(names, what)
        net = self.network
        if not isinstance(net, nn.LeNet5):
            return            # tracing checks the shapes against the layers
        want_image = [net.batch_size, net.num_channel, 32, 32]
        types = dict(zip(names, dataset.output_types()))
        shapes = dict(zip(names, dataset.output_shapes()))
        image, label = shapes[image_col], shapes[label_col]
        fits = len(image) == 4 and all(g in (w, -1) for g, w in zip(image[1:], want_image[1:]))
        batch_ok = image[:1] in ([net.batch_size], [-1]) if exact_batch else \
            len(image) == 4 and (image[0] == -1 or 1 <= image[0] <= net.batch_size)
        if types[image_col] != "float32" or not fits or not batch_ok:
            raise ValueError(f"{what}: the dataset's images are {types[image_col]} {image}; the "
                             f"network takes float32 {want_image} (resize to 32x32, rescale, "
                             f"HWC2CHW, and batch {net.batch_size} with drop_remainder=True)")
        if types[label_col] != "int32" or len(label) != 1:
            raise ValueError(f"{what}: the dataset's labels are {types[label_col]} {label}; the "
                             f"network takes int32 [{net.batch_size}] "
                             f"(map transforms.TypeCast(sluice.int32) on '{label_col}')")

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              autotune=False, devices=None):
        """Trains for ``epoch`` epochs over ``train_dataset``.

        Args:
            epoch (int): epochs, >= 1.
            train_dataset (Dataset): rows with ``image`` float32
                (batch, channels, 32, 32) and ``label`` int32 (batch).
            callbacks: a callback or a list of them (:class:`LossMonitor`,
                :class:`TimeMonitor`, :class:`ModelCheckpoint`, your own
                :class:`Callback`), called in this order.
            dataset_sink_mode (bool): sink the data (batches go through the
                device's queue, filled by a transfer thread, or on the cpu
                device by the executor itself; the steps of a sink run back
                to back) or, False (the default), feed every step from the
                host.
            sink_size (int): in sink mode, -1 (the default) sinks each epoch
                whole; N > 0 makes each epoch N steps of an endless traversal
                that the next epoch continues. Ignored without sinking.
            autotune (bool): sluice's own: tune the pipeline while training
                (the buffer pool's idle cap, a map's workers up to the CPUs,
                a queue's depth; when sinking, the device queue's depth),
                one change at a time, undone if throughput fell (but for
                the pool's cap, which costs memory, not speed);
                :meth:`autotune_log` then says what it changed and why.
            devices (list of str): sluice's own: data parallel on several
                devices of one kind, the model's own first, e.g.
                ``["cpu:0", "cpu:1"]``. Each holds a replica of the
                parameters and steps on a batch of its own; gradients are
                averaged (summed in device order: runs are bit-identical)
                before every replica applies the same update. A step is
                global (one batch per device: the global batch is the
                dataset's batch times the devices); the loss the callbacks
                see is the mean over devices; the batches at the end of an
                epoch that do not fill a global step are dropped. None (the
                default): the model's device alone.

        After :func:`sluice.communication.init` (under ``mpirun``) with
        ``set_auto_parallel_context(parallel_mode="data_parallel")``, the
        training is data parallel across the job's ranks as well: each rank
        trains on its own shard of the data (give the dataset's source
        ``num_shards=get_group_size(), shard_id=get_rank()``; rank 0 warns
        on stderr when it is not split so), the gradients are averaged over
        every rank after every step, and every rank ends with the same
        parameters. The loss is the mean over the ranks, so the lines of
        LossMonitor and TimeMonitor are printed by rank 0 alone. A rank's
        failure (an exception in one of its callbacks too) stops every rank
        with its message.

        The results are the same, bit for bit, with and without sinking.
        Callbacks see every step without sinking, one step_end per sink
        with it. ValueError for bad arguments and datasets (columns, types,
        shapes, an empty or endless epoch where one must end);
        RuntimeError with the C library's message for failures while
        training (a pipeline error, a NaN loss); an exception raised by a callback
        stops training and is raised here; Ctrl-C raises KeyboardInterrupt.
        Every thread training started is joined before it returns.
        """
        epoch = _int(epoch, "train: epoch")
        sink_size = _int(sink_size, "train: sink_size")
        if devices is not None:
            if isinstance(devices, str):
                devices = [devices]
            if (not isinstance(devices, (list, tuple)) or
                    not all(isinstance(d, str) for d in devices)):
                raise TypeError(f"train: devices must be a list of device names such as "
                                f"['cpu:0', 'cpu:1'], got {devices!r}")
            if any("," in d for d in devices):
                raise ValueError(f"train: devices {devices!r}: give one name per item")
            devices = ",".join(devices)
        if epoch < 1:
            raise ValueError(f"train: epoch must be >= 1, got {epoch}")
        if sink_size == 0 or sink_size < -1:
            raise ValueError(f"train: sink_size must be -1 (each epoch sinks the whole dataset) "
                             f"or > 0, got {sink_size}")
        if self.optimizer is None:
            raise ValueError("train: the model has no optimizer; make it with one to train")
        self._check_dataset(train_dataset, "train", True,
                            needs_end=bool(dataset_sink_mode) and sink_size == -1)
        distributed = context._data_parallel("train")
        if distributed:
            _check_shards(train_dataset)
        if callbacks is None:
            callbacks = []
        elif not isinstance(callbacks, (list, tuple)):
            callbacks = [callbacks]
        sink = bool(dataset_sink_mode)
        params = CallbackParam(train_network=self.network, epoch_num=epoch, batch_num=-1,
                               cur_epoch_num=0, cur_step_num=0, cur_step_in_epoch=0,
                               net_outputs=None, dataset_sink_mode=sink, step_time_ms=0.0,
                               epoch_time_ms=0.0)
        run_context = RunContext(params)
        self._ensure(train_dataset, "train")
        start = self._c.global_step()
        # After a Python hook the model takes the values back: the hook may
        # have made, trained or evaluated another Model over the network.
        specs = [cb._spec() if isinstance(cb, _BuiltIn) else
                 _Hooks(cb, params, run_context, start, self._claim) for cb in callbacks]
        if distributed and _sluice.distributed_rank() != 0:
            # rank 0's lines say it all: the loss is the ranks' mean
            specs = [spec for spec in specs if not isinstance(spec, tuple) or
                     spec[0] not in ("loss_monitor", "time_monitor")]
        self._c.train(epoch, train_dataset._c, specs, sink, sink_size if sink else -1,
                      bool(autotune), devices, distributed)

    def autotune_log(self):
        """What the tuner of the last ``train(..., autotune=True)`` said, a
        line per change and per judgement of one (empty without it)."""
        if self._c is None:
            return []
        return self._c.autotune_log()

    def stage_stats(self):
        """Where the last sink-mode ``train`` spent its time, per stage:
        ``{"stages": [...], "verdict": "..."}``. Each stage (the pipeline's,
        then ``transfer`` (``transfer (inline, on the executor)`` where the
        executor moves the batches itself), ``executor (cpu:0)`` and
        ``host (callbacks)``) is a
        dict of name, threads, rows, elapsed_ms, busy_ms, wait_input_ms,
        startup_wait_ms, blocked_output_ms, capacity, occupancy and thread_ms; the
        verdict says which stage limits throughput. No stages before a
        sink-mode train."""
        if self._c is None:
            return {"stages": [], "verdict": "no stages to judge"}
        return self._c.stage_stats()

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """Runs the network over one pass of ``valid_dataset`` and returns
        ``{name: value}`` for the model's metrics (``{"accuracy": 0.87}``).
        A last batch smaller than the network's is padded and only its real
        rows count. A callback of this model's own training may call it
        (evaluating while training): it runs between two steps or sinks on
        the current weights, and the training goes on as it would have.

        Args:
            valid_dataset (Dataset): as for :meth:`train`; the last batch may
                be smaller.
            callbacks: None (or an empty list): sluice's evaluation calls
                none; given callbacks raise ValueError rather than be
                silently skipped.
            dataset_sink_mode (bool): accepted as MindSpore's; evaluation
                reads its batches the same way either way (one forward pass
                each, no step to sink), so the results are the same.
        """
        if callbacks not in (None, [], ()):
            raise ValueError("eval: sluice's evaluation runs no callbacks; pass none")
        if not isinstance(dataset_sink_mode, bool):
            raise TypeError("eval: dataset_sink_mode must be True or False")
        if not self._metrics:
            raise ValueError("eval: the model has no metrics; make it with "
                             "metrics={'accuracy'}")
        self._check_dataset(valid_dataset, "eval", False, needs_end=True)
        self._ensure(valid_dataset, "eval")
        _, accuracy, loss = self._c.eval(valid_dataset._c)
        return {name: accuracy if kind == "accuracy" else loss
                for name, kind in self._metrics.items()}
