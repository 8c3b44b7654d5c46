"""nn.LSTM / nn.GRU / nn.RNN and their cells as users write them, through static_runtime against
eager PyTorch: the recurrent kernels (ops/recurrent/) take the layers on padded input and on
packed sequences, and the cells; what they do not take (an LSTM with proj_size) runs ATen's op
with the same results. Two input shapes, each run twice.
"""

from typing import List, Tuple

import pytest
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import static_runtime


class Layer(nn.Module):
    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        out, hidden = self.rnn(x)
        if isinstance(hidden, tuple):
            return out, hidden[0], hidden[1]
        return out, hidden, hidden


class Packed(nn.Module):
    """pack_padded_sequence -> LSTM -> pad_packed_sequence: the `data` overload of aten::lstm."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.rnn(packed)
        padded, _ = pad_packed_sequence(out, batch_first=True)
        return padded, h, c


class Decoder(nn.Module):
    """An LSTMCell stepped in a loop, as hand-written decoders do."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(12, 24)
        self.out = nn.Linear(24, 12)

    def forward(self, x: Tensor, steps: int) -> Tensor:
        h = torch.zeros(x.size(0), 24)
        c = torch.zeros(x.size(0), 24)
        outputs: List[Tensor] = []
        for _ in range(steps):
            h, c = self.cell(x, (h, c))
            x = self.out(h)
            outputs.append(x)
        return torch.stack(outputs, 1)


def _run(module: nn.Module, inputs, expect_kernel: str = "") -> None:
    torch.manual_seed(0)
    module = module.eval()
    static = static_runtime.StaticModule(torch.jit.script(module))
    for args in inputs + inputs:
        with torch.no_grad():
            expected = module(*args)
        actual = static(*args)
        if isinstance(expected, Tensor):
            expected, actual = (expected,), (actual,)
        assert len(actual) == len(expected)
        for want, got in zip(expected, actual):
            torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
    if expect_kernel:
        assert expect_kernel not in static.stats()["fallback_ops"]


LAYERS = {
    "lstm": lambda: nn.LSTM(10, 20, num_layers=2, bidirectional=True, batch_first=True),
    "gru": lambda: nn.GRU(10, 20, num_layers=2, bidirectional=True, batch_first=True),
    "rnn_tanh": lambda: nn.RNN(10, 20, num_layers=2, batch_first=True),
    "rnn_relu": lambda: nn.RNN(10, 20, nonlinearity="relu", bias=False),
}


@pytest.mark.parametrize("op", sorted(LAYERS))
def test_layers_run_our_kernel(op: str) -> None:
    torch.manual_seed(1)
    _run(Layer(LAYERS[op]()), [(torch.randn(1, 7, 10),), (torch.randn(3, 4, 10),)], "aten::" + op)


def test_lstm_with_projection_runs_aten() -> None:
    torch.manual_seed(2)
    _run(Layer(nn.LSTM(10, 20, proj_size=8, batch_first=True)),
         [(torch.randn(1, 7, 10),), (torch.randn(3, 4, 10),)])


def test_packed_sequence_runs_our_kernel() -> None:
    torch.manual_seed(3)
    _run(Packed(), [(torch.randn(3, 5, 8), torch.tensor([5, 2, 4])),
                    (torch.randn(2, 6, 8), torch.tensor([3, 6]))], "aten::lstm")


def test_cell_in_a_loop() -> None:
    torch.manual_seed(4)
    _run(Decoder(), [(torch.randn(1, 12), 5), (torch.randn(4, 12), 3)], "aten::lstm_cell")
