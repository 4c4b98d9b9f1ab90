# A verbatim copy of the task's reference definition (spec/reference_model.py), kept in
# the project so that the tests and bench.py run wherever the project is copied.
"""The block that ModelNew must reproduce: the task's reference definition.

A 1D inverted-residual (depthwise-separable) block, as used in genomic sequence
models: pointwise expand -> depthwise conv ("same" padding) -> exact GELU ->
pointwise project back -> residual add.

    y = x + W2 @ gelu(dwconv_K(W1 @ x + b1) + bd) + b2

x is [batch, channels, seq_len]. The depthwise conv zero-pads its *input*
(the pointwise output h1), so padded positions contribute 0, not b1.

ModelNew must take the same constructor arguments, create the same submodules
in the same order (so a seeded construction gives identical parameters, and
state_dicts load both ways), and compute the same forward.

An evaluator may draw batch_size and seq_len per trial from roughly 0.85x-1.15x
of the defaults below, so odd lengths must work.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, expanded_channels, kernel_size):
        super().__init__()
        self.pointwise = nn.Conv1d(channels, expanded_channels, 1)
        self.depthwise = nn.Conv1d(expanded_channels, expanded_channels, kernel_size,
                                   padding=kernel_size // 2, groups=expanded_channels)
        self.activation = nn.GELU()
        self.project_back = nn.Conv1d(expanded_channels, channels, 1)

    def forward(self, x):
        residual = x
        x = self.pointwise(x)
        x = self.depthwise(x)
        x = self.activation(x)
        x = self.project_back(x)
        return x + residual


batch_size = 32
channels = 256
expanded_channels = 512
seq_len = 4096
kernel_size = 9


def get_inputs():
    return [torch.randn(batch_size, channels, seq_len)]


def get_init_inputs():
    return [channels, expanded_channels, kernel_size]
