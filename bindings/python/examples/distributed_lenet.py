#!/usr/bin/python3
# seed000_model_train.py (the seeds' LeNet trained by Model.train, sinking
# sink_size=1000 steps per epoch) made data parallel across processes, as a
# MindSpore script is: a rank per process, started by mpirun,
#
#     PYTHONPATH=build/bindings/python/stage mpirun --allow-run-as-root \
#         --oversubscribe -np 2 /usr/bin/python3 \
#         bindings/python/examples/distributed_lenet.py
#
# Changed from it, and nothing else:
#  - init() joins the ranks; set_auto_parallel_context(parallel_mode=
#    DATA_PARALLEL, gradients_mean=True) makes Model.train average their
#    gradients after every step;
#  - each rank reads its own shard: MnistDataset(..., num_shards=
#    get_group_size(), shard_id=get_rank());
#  - rank 0 alone prints the banner (LossMonitor's lines are rank 0's
#    alone by themselves: the loss is the ranks' mean);
#  - options for a short run (the tests'): --data, --epochs, --sink-size,
#    and --save DIR, where each rank saves its parameters as
#    DIR/lenet_rank<r>.ckpt (every rank holds the same ones).
import argparse
import os
import sluice.dataset as ds
import sluice.dataset.transforms.c_transforms as CT
import sluice.dataset.vision.c_transforms as CV
import sluice.nn as nn
from sluice import context, Model, save_checkpoint
from sluice.communication import init, get_rank, get_group_size
from sluice import dtype as mstype
from sluice.common.initializer import TruncatedNormal
from sluice.dataset.vision import Inter
from sluice.nn import Accuracy
import sluice.ops as ops
from sluice.train.callback import LossMonitor


def create_dataset(data_path, batch_size=32, repeat_size=1,
                   num_parallel_workers=1):
    """
    create dataset for train or test
    """
    # define dataset
    mnist_ds = ds.MnistDataset(data_path, num_shards=get_group_size(), shard_id=get_rank())

    resize_height, resize_width = 32, 32
    rescale = 1.0 / 255.0
    shift = 0.0
    rescale_nml = 1 / 0.3081
    shift_nml = -1 * 0.1307 / 0.3081

    # define map operations
    resize_op = CV.Resize((resize_height, resize_width), interpolation=Inter.LINEAR)  # Bilinear mode
    rescale_nml_op = CV.Rescale(rescale_nml, shift_nml)
    rescale_op = CV.Rescale(rescale, shift)
    hwc2chw_op = CV.HWC2CHW()
    type_cast_op = CT.TypeCast(mstype.int32)

    # apply map operations on images
    mnist_ds = mnist_ds.map(input_columns="label", operations=type_cast_op, num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=resize_op, num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_op, num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_nml_op, num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=hwc2chw_op, num_parallel_workers=num_parallel_workers)

    # apply DatasetOps
    buffer_size = 10000
    mnist_ds = mnist_ds.shuffle(buffer_size=buffer_size)  # 10000 as in LeNet train script
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=True)
    mnist_ds = mnist_ds.repeat(repeat_size)

    return mnist_ds


def conv(in_channels, out_channels, kernel_size, stride=1, padding=0):
    """weight initial for conv layer"""
    weight = weight_variable()
    return nn.Conv2d(in_channels, out_channels,
                     kernel_size=kernel_size, stride=stride, padding=padding,
                     weight_init=weight, has_bias=False, pad_mode="valid")


def fc_with_initialize(input_channels, out_channels):
    """weight initial for fc layer"""
    weight = weight_variable()
    bias = weight_variable()
    return nn.Dense(input_channels, out_channels, weight, bias)


def weight_variable():
    """weight initial"""
    return TruncatedNormal(0.02)


class LeNet5(nn.Cell):
    """
    Lenet network
    Args:
        num_class (int): Num classes. Default: 10.

    Returns:
        Tensor, output tensor

    Examples:
        >>> LeNet(num_class=10)
    """
    def __init__(self, num_class=10):
        super(LeNet5, self).__init__()
        self.num_class = num_class
        self.batch_size = 32
        self.conv1 = conv(1, 6, 5)
        self.conv2 = conv(6, 16, 5)
        self.fc1 = fc_with_initialize(16 * 5 * 5, 120)
        self.fc2 = fc_with_initialize(120, 84)
        self.fc3 = fc_with_initialize(84, self.num_class)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.reshape = ops.Reshape()

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.reshape(x, (self.batch_size, -1))
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)
        x = self.relu(x)
        x = self.fc3(x)
        return x


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The seeds' LeNet, data parallel under mpirun")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--sink-size", type=int, default=1000)
    parser.add_argument("--save", metavar="DIR", help="save DIR/lenet_rank<r>.ckpt at the end")
    args = parser.parse_args()

    context.set_context(mode=context.GRAPH_MODE, device_target="CPU")
    init()
    context.set_auto_parallel_context(parallel_mode=context.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ds_train_path = args.data
    ds_train = create_dataset(ds_train_path, 32)

    network = LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    model = Model(network, net_loss, net_opt)

    if get_rank() == 0:
        print("============== Starting Training ==============")
    model.train(epoch=args.epochs, train_dataset=ds_train, callbacks=[LossMonitor()], dataset_sink_mode=True, sink_size=args.sink_size)
    if args.save:
        save_checkpoint(network, os.path.join(args.save, f"lenet_rank{get_rank()}.ckpt"))
