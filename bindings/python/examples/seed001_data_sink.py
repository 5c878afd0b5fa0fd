#!/usr/bin/python3
"""Seed 001's data_sink sample ("data_sink Implements Data Sinking") with
`import sluice as ms` in place of `import mindspore as ms`.

The seed's own LeNet5 (an nn.Cell of Conv2d, Dense, ReLU and MaxPool2d
layers with a construct calling ops.reshape), its forward_fn, grad_fn =
ms.value_and_grad(...) and train_step(data, label); sluice traces
train_step into one compiled step and sinks it through the device queue.
The three calling patterns of the seed train the same network in turn:

  1. sink_size 1, called data_size * epochs times, a loss line per step
  2. sink_size data_size, called epochs times, a loss line per epoch
  3. sink_size epochs * data_size, called once

Differences from the seed, all about where it runs, where the data comes
from and how long it runs: device_target "CPU" (sluice has no GPU),
Debian's Fashion-MNIST (dataset-fashion-mnist) instead of the download,
its train split (usage="train"), and --steps to cut an epoch to that many
batches (default: the whole dataset, 1875 batches) and --epochs (default
10). Each data_sink is closed once its pattern is done.

    PYTHONPATH=build/bindings/python/stage /usr/bin/python3 \\
        bindings/python/examples/seed001_data_sink.py --epochs 2 --steps 5
"""
import argparse

import sluice as ms
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
import sluice.ops as ops
from sluice.common.initializer import TruncatedNormal
from sluice.dataset.vision import Inter


def create_dataset(data_path, batch_size=32, repeat_size=1, num_parallel_workers=1):
    """ create dataset for train or test """
    # define dataset (Debian's folder holds both splits: usage picks one)
    mnist_ds = ds.MnistDataset(data_path, usage="train")
    resize_height, resize_width = 32, 32
    rescale = 1.0 / 255.0
    shift = 0.0
    rescale_nml = 1 / 0.3081
    shift_nml = -1 * 0.1307 / 0.3081

    # define map operations
    resize_op = vision.Resize((resize_height, resize_width), interpolation=Inter.LINEAR)
    rescale_nml_op = vision.Rescale(rescale_nml, shift_nml)
    rescale_op = vision.Rescale(rescale, shift)
    hwc2chw_op = vision.HWC2CHW()
    type_cast_op = transforms.TypeCast(ms.int32)

    # apply map operations on images
    mnist_ds = mnist_ds.map(input_columns="label", operations=type_cast_op,
                            num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=resize_op,
                            num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_op,
                            num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_nml_op,
                            num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(input_columns="image", operations=hwc2chw_op,
                            num_parallel_workers=num_parallel_workers)

    # apply DatasetOps
    buffer_size = 10000
    mnist_ds = mnist_ds.shuffle(buffer_size=buffer_size)  # 10000 as in LeNet train script
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=True)
    mnist_ds = mnist_ds.repeat(repeat_size)
    return mnist_ds


def conv(in_channels, out_channels, kernel_size, stride=1, padding=0):
    """weight initial for conv layer"""
    weight = weight_variable()
    return nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                     padding=padding, weight_init=weight, has_bias=False, pad_mode="valid")


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

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = ops.reshape(x, (self.batch_size, -1))
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)
        x = self.relu(x)
        x = self.fc3(x)
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="folder of the MNIST IDX files (default: Debian's Fashion-MNIST)")
    parser.add_argument("--epochs", type=int, default=10, help="epochs (default 10)")
    parser.add_argument("--steps", type=int, default=0,
                        help="batches an epoch counts (default 0: the whole dataset)")
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    ds_train_path = args.data

    network = LeNet5(10)
    network.set_train()
    weights = network.trainable_params()
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)

    def forward_fn(data, label):
        loss = net_loss(network(data), label)
        return loss

    grad_fn = ms.value_and_grad(forward_fn, None, weights)

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        net_opt(grads)
        return loss

    def dataset_size(d):
        size = d.get_dataset_size()
        return min(size, args.steps) if args.steps > 0 else size

    print("============== Different calling methods train {} epochs ==============".format(
        args.epochs))
    jit = ms.JitConfig()
    print("1. Default, execute one step data each per sink")
    ds_train = create_dataset(ds_train_path, 32)
    data_size = dataset_size(ds_train)
    epochs = args.epochs
    sink_process = ms.data_sink(train_step, ds_train, jit_config=jit)
    for _ in range(data_size * epochs):
        loss = sink_process()
        print(f"step {_ + 1}, loss is {loss}")
    sink_process.close()

    print("2. Execute one epoch data per sink")
    ds_train = create_dataset(ds_train_path, 32)
    data_size = dataset_size(ds_train)
    epochs = args.epochs
    sink_process = ms.data_sink(train_step, ds_train, sink_size=data_size, jit_config=jit)
    for _ in range(epochs):
        loss = sink_process()
        print(f"epoch {_ + 1}, loss is {loss}")
    sink_process.close()

    print("3. Execute multiple epoch data per sink")
    ds_train = create_dataset(ds_train_path, 32)
    data_size = dataset_size(ds_train)
    epochs = args.epochs
    sink_process = ms.data_sink(train_step, ds_train, sink_size=epochs * data_size,
                                jit_config=jit)
    loss = sink_process()
    print(f"loss is {loss}")
    sink_process.close()


if __name__ == "__main__":
    main()
