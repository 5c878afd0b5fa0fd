"""sluice.train: training, as ``mindspore.train``.

:class:`Model` compiles a network (:mod:`sluice.nn`) with its loss and
optimizer into a C model; ``Model.train`` trains it on a
:class:`sluice.dataset.Dataset` with or without data sinking and
``Model.eval`` measures it. The seeds' script reads::

    model = train.Model(network, net_loss, net_opt, metrics={"accuracy"})
    model.train(10, ds_train, callbacks=[train.LossMonitor(), train.TimeMonitor()],
                dataset_sink_mode=True, sink_size=1000)
    print(model.eval(ds_test))            # {'accuracy': 0.87...}

Custom loops use :class:`DatasetHelper` with
:func:`connect_network_with_dataset`, or :func:`sluice.data_sink`.
Checkpoints: :func:`sluice.save_checkpoint`, :func:`sluice.load_checkpoint`,
:func:`sluice.load_param_into_net`.
"""
from sluice.train.callback import (Callback, CallbackParam, CheckpointConfig, LossMonitor,
                                   ModelCheckpoint, RunContext, TimeMonitor)
from sluice.train.dataset_helper import DatasetHelper, connect_network_with_dataset, data_sink
from sluice.train.model import Accuracy, Loss, Model
from sluice.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

__all__ = ["Model", "Accuracy", "Loss", "Callback", "CallbackParam", "RunContext",
           "LossMonitor", "TimeMonitor", "ModelCheckpoint", "CheckpointConfig", "DatasetHelper",
           "connect_network_with_dataset", "data_sink", "save_checkpoint", "load_checkpoint",
           "load_param_into_net"]
