"""Type stubs of sluice.train."""
from sluice.train.callback import (Callback as Callback, CallbackParam as CallbackParam,
                                   CheckpointConfig as CheckpointConfig,
                                   LossMonitor as LossMonitor,
                                   ModelCheckpoint as ModelCheckpoint, RunContext as RunContext,
                                   TimeMonitor as TimeMonitor)
from sluice.train.dataset_helper import (DatasetHelper as DatasetHelper,
                                         connect_network_with_dataset as
                                         connect_network_with_dataset,
                                         data_sink as data_sink)
from sluice.train.model import Accuracy as Accuracy, Loss as Loss, Model as Model
from sluice.train.serialization import (load_checkpoint as load_checkpoint,
                                        load_param_into_net as load_param_into_net,
                                        save_checkpoint as save_checkpoint)
