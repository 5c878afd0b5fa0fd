#!/usr/bin/python3
"""The MindSpore docs' LeNet script with `import sluice` in place of `import mindspore`.

The seeds' three ways to train LeNet5 on (Fashion-)MNIST, on sluice's C
executor, then an evaluation on the test split:

  --loop model      Model.train with LossMonitor and TimeMonitor, sinking
                    sink_size steps per epoch (seed 001, "Model.train
                    Implements Data Sinking"); the default
  --loop data_sink  data_sink(train_step, ds_train, sink_size): one call
                    per epoch (seed 001, "data_sink Implements Data Sinking")
  --loop custom     a custom loop over a DatasetHelper connected to a
                    TrainOneStepCell (seed 004, "custom training loop")

The network, loss and optimizer are the seeds': LeNet5(10),
SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
Momentum(0.01, 0.9), on the seeds' create_dataset pipeline (batch 32).

    PYTHONPATH=build/bindings/python/stage /usr/bin/python3 \\
        bindings/python/examples/lenet_sluice.py                  # 10 x 1000 steps
    ... lenet_sluice.py --epochs 2 --sink-size 20 --eval-batches 5   # seconds

Needs python3-numpy (Debian's; run with /usr/bin/python3).
"""
import argparse

import sluice as ms
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train
from sluice.dataset.vision import Inter


def create_dataset(data_path, usage, batch_size=32, repeat_size=1, num_parallel_workers=1):
    """ create dataset for train or test """
    # define dataset (the folder holds both splits: usage picks one)
    mnist_ds = ds.MnistDataset(data_path, usage=usage)

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


def train_with_model(network, net_loss, net_opt, ds_train, args):
    """Seed 001: Model.train with data sinking."""
    model = train.Model(network, net_loss, net_opt, metrics={"accuracy"})
    print("============== Starting Training ==============")
    model.train(epoch=args.epochs, train_dataset=ds_train,
                callbacks=[train.LossMonitor(), train.TimeMonitor()],
                dataset_sink_mode=True, sink_size=args.sink_size)
    return model


def train_with_data_sink(network, net_loss, net_opt, ds_train, args):
    """Seed 001: data_sink, one sink of sink_size steps per call."""
    train_step = nn.TrainOneStepCell(nn.WithLossCell(network, net_loss), net_opt)
    print("============== Starting Training ==============")
    sink_size = args.sink_size if args.sink_size > 0 else ds_train.get_dataset_size()
    with ms.data_sink(train_step, ds_train, sink_size=sink_size) as sink_process:
        for epoch in range(args.epochs):
            loss = sink_process()
            print(f"epoch {epoch + 1}, loss is {loss}")
    return train.Model(network, net_loss, metrics={"accuracy"})


def train_with_custom_loop(network, net_loss, net_opt, ds_train, args):
    """Seed 004: a DatasetHelper connected to the training network."""
    net = nn.WithLossCell(network, net_loss)
    net = nn.TrainOneStepCell(net, net_opt)
    dataset_helper = train.DatasetHelper(ds_train, dataset_sink_mode=True,
                                         sink_size=args.sink_size, epoch_num=args.epochs)
    net = train.connect_network_with_dataset(net, dataset_helper)
    network.set_train()
    print("============== Starting Training ==============")
    epoch = args.epochs
    with dataset_helper:
        for step in range(epoch):
            for inputs in dataset_helper:
                output = net(*inputs)
                print("epoch: {0}/{1}, losses: {2}".format(step + 1, epoch, output.asnumpy()),
                      flush=True)
    return train.Model(network, net_loss, metrics={"accuracy"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                   help="an MNIST folder with both splits (default: Fashion-MNIST)")
    p.add_argument("--epochs", type=int, default=10, help="epochs (default 10)")
    p.add_argument("--sink-size", type=int, default=1000,
                   help="steps per epoch's sink (default 1000, as the seeds; -1: whole epochs)")
    p.add_argument("--loop", choices=("model", "data_sink", "custom"), default="model")
    p.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    p.add_argument("--eval-batches", type=int, default=0,
                   help="evaluate on the first N test batches (default: all)")
    args = p.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE,
                   device_target="CPU")
    ds_train = create_dataset(args.data, "train", 32)

    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), 0.01, 0.9)
    run = {"model": train_with_model, "data_sink": train_with_data_sink,
           "custom": train_with_custom_loop}[args.loop]
    model = run(network, net_loss, net_opt, ds_train, args)

    print("============== Starting Testing ==============")
    ds_eval = create_dataset(args.data, "test", 32)
    if args.eval_batches > 0:
        ds_eval = ds_eval.take(args.eval_batches)
    print(model.eval(ds_eval))


if __name__ == "__main__":
    main()
