#!/usr/bin/python3
"""MindSpore's tutorial "evaluate the model during training" (seed 004's
third scenario) with `import sluice` in place of `import mindspore`.

Its EvalCallBack calls self.model.eval(...) from epoch_end of the model's
own training: every eval_per_epoch epochs the test split's accuracy on the
weights of that moment, while ModelCheckpoint saves those weights and
LossMonitor prints the loss. The training goes on exactly as without the
evaluations.

    PYTHONPATH=build/bindings/python/stage /usr/bin/python3 \\
        bindings/python/examples/eval_while_training.py              # 10 epochs
    ... eval_while_training.py --epochs 2 --eval-per-epoch 1 \\
        --train-samples 3200 --eval-samples 640                      # seconds

Needs python3-numpy (Debian's; run with /usr/bin/python3).
"""
import argparse
import os

import sluice as ms
import sluice.dataset as ds
import sluice.dataset.transforms as CT
import sluice.dataset.vision as CV
import sluice.nn as nn
from sluice.dataset.vision import Inter
from sluice.nn import Accuracy
from sluice.train import Model
from sluice.train.callback import (Callback, CheckpointConfig, LossMonitor,
                                   ModelCheckpoint)


class EvalCallBack(Callback):
    """The tutorial's callback, as written there."""

    def __init__(self, model, eval_dataset, eval_per_epoch, epoch_per_eval):
        self.model = model
        self.eval_dataset = eval_dataset
        self.eval_per_epoch = eval_per_epoch
        self.epoch_per_eval = epoch_per_eval

    def epoch_end(self, run_context):
        cb_param = run_context.original_args()
        cur_epoch = cb_param.cur_epoch_num
        if cur_epoch % self.eval_per_epoch == 0:
            acc = self.model.eval(self.eval_dataset, dataset_sink_mode=False)
            self.epoch_per_eval["epoch"].append(cur_epoch)
            self.epoch_per_eval["acc"].append(acc["Accuracy"])
            print(acc)


def create_dataset(data_path, usage, batch_size=32, num_samples=None, drop_remainder=True):
    """The tutorial's create_dataset (one map per operation); the folder
    holds both splits, usage picks one."""
    mnist_ds = ds.MnistDataset(data_path, usage=usage, num_samples=num_samples)
    resize_op = CV.Resize((32, 32), interpolation=Inter.LINEAR)
    rescale_nml_op = CV.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081)
    rescale_op = CV.Rescale(1.0 / 255.0, 0.0)
    hwc2chw_op = CV.HWC2CHW()
    type_cast_op = CT.TypeCast(ms.int32)
    mnist_ds = mnist_ds.map(input_columns="label", operations=type_cast_op)
    mnist_ds = mnist_ds.map(input_columns="image", operations=resize_op)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_op)
    mnist_ds = mnist_ds.map(input_columns="image", operations=rescale_nml_op)
    mnist_ds = mnist_ds.map(input_columns="image", operations=hwc2chw_op)
    mnist_ds = mnist_ds.shuffle(buffer_size=10000)
    return mnist_ds.batch(batch_size, drop_remainder=drop_remainder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="an MNIST folder with both splits")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--eval-per-epoch", type=int, default=2)
    parser.add_argument("--train-samples", type=int, default=None,
                        help="read this many train samples (default: all)")
    parser.add_argument("--eval-samples", type=int, default=None,
                        help="evaluate on this many test samples (default: all)")
    parser.add_argument("--ckpt-dir", default="./lenet_ckpt")
    parser.add_argument("--no-sink", action="store_true", help="dataset_sink_mode=False")
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    train_data = create_dataset(args.data, "train", num_samples=args.train_samples)
    # the whole test split: its last short batch is padded, its real rows counted
    eval_data = create_dataset(args.data, "test", num_samples=args.eval_samples,
                               drop_remainder=False)
    steps = train_data.get_dataset_size()

    network = nn.LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), learning_rate=0.01, momentum=0.9)
    config_ck = CheckpointConfig(save_checkpoint_steps=args.eval_per_epoch * steps,
                                 keep_checkpoint_max=15)
    ckpoint_cb = ModelCheckpoint(prefix="checkpoint_lenet", directory=args.ckpt_dir,
                                 config=config_ck)
    model = Model(network, net_loss, net_opt, metrics={"Accuracy": Accuracy()})

    epoch_per_eval = {"epoch": [], "acc": []}
    eval_cb = EvalCallBack(model, eval_data, args.eval_per_epoch, epoch_per_eval)
    model.train(args.epochs, train_data,
                callbacks=[ckpoint_cb, LossMonitor(max(1, steps // 5)), eval_cb],
                dataset_sink_mode=not args.no_sink)
    print("epoch_per_eval:", epoch_per_eval)
    print("checkpoints:", sorted(os.listdir(args.ckpt_dir)))


if __name__ == "__main__":
    main()
