#!/usr/bin/python3
# Seed 004's first example, "自定义训练网络" (a custom training network:
# MindSpore r1.0's programming guide, train.md), with `sluice` in place of
# `mindspore` in the import lines and nothing else changed.
# ReLUReduceMeanDense (ops.ReLU, ops.ReduceMean over (2, 3), Dense from
# Tensor values) with MindSpore's default loss,
# SoftmaxCrossEntropyWithLogits(sparse=False): one-hot float labels and a
# loss per sample. TrainOneStepCell called on two Tensors runs one training
# step now (traced and compiled on the CPU for those shapes) and returns the
# 32 per-sample losses: all 0, as the seed's labels are all zero.
#
#     PYTHONPATH=build/bindings/python/stage /usr/bin/python3 \
#         bindings/python/examples/seed004_custom_network.py
import numpy as np
from sluice.common.tensor import Tensor
from sluice.nn import Cell, Dense, SoftmaxCrossEntropyWithLogits, Momentum, TrainOneStepCell, WithLossCell
import sluice.ops as ops


class ReLUReduceMeanDense(Cell):
    def __init__(self, kernel, bias, in_channel, num_class):
        super().__init__()
        self.relu = ops.ReLU()
        self.mean = ops.ReduceMean(keep_dims=False)
        self.dense = Dense(in_channel, num_class, kernel, bias)

    def construct(self, x):
        x = self.relu(x)
        x = self.mean(x, (2, 3))
        x = self.dense(x)
        return x


if __name__ == "__main__":
    weight_np = np.ones((1000, 2048)).astype(np.float32)
    weight = Tensor(weight_np.copy())
    bias_np = np.ones((1000,)).astype(np.float32)
    bias = Tensor(bias_np.copy())
    net = ReLUReduceMeanDense(weight, bias, 2048, 1000)
    criterion = SoftmaxCrossEntropyWithLogits(sparse=False)
    optimizer = Momentum(learning_rate=0.1, momentum=0.1,
                         params=filter(lambda x: x.requires_grad, net.get_parameters()))
    net_with_criterion = WithLossCell(net, criterion)
    train_network = TrainOneStepCell(net_with_criterion, optimizer)
    train_network.set_train()
    input_np = np.random.randn(32, 2048, 7, 7).astype(np.float32)
    input = Tensor(input_np.copy())
    label_np_onehot = np.zeros(shape=(32, 1000)).astype(np.float32)
    label = Tensor(label_np_onehot.copy())
    for i in range(1):
        loss = train_network(input, label)
        print("-------loss------", loss)
