"""Modules for the op lowerings of graft-cli convert, one per op family.

Imported by run-convert.py (torch 2.x in the venv) and by /usr/bin/python3
(Debian's torch 1.13) to make the same modules' TorchScript files with the
older generation: only torch is imported here.
"""
from typing import Dict, List

import torch
import torch.nn.functional as F
from torch import nn


class CausalAttention(nn.Module):
    """scaled_dot_product_attention with is_causal, and with a float attn_mask."""

    def forward(self, q, k, v):
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        bias = torch.tanh(q.sum(-1, keepdim=True))
        masked = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return causal + masked


class Pads(nn.Module):
    def forward(self, x):
        a = F.pad(x, [1, 2, 0, 1], value=0.5)
        b = F.pad(x, [2, 1, 1, 2], mode="reflect")
        c = F.pad(x, [1, 3, 2, 0], mode="replicate")
        return a.sum() + b * 2, c


class PadToMultiple(nn.Module):
    """A pad list computed from the input's sizes: up to a multiple of 4, as window models do."""

    def forward(self, x):
        h, w = x.shape[-2], x.shape[-1]
        return F.pad(x, [0, (4 - w % 4) % 4, 1, (4 - h % 4) % 4 + 1], mode="replicate") * 2


class CumulativeSum(nn.Module):
    def forward(self, x):
        return torch.relu(x).cumsum(1) * 2 + x.cumsum(-1)


class TransposedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.grouped = nn.ConvTranspose2d(3, 6, 4, stride=2, padding=1, groups=3, bias=False)

    def forward(self, x):
        return self.grouped(torch.relu(self.up(x)))


class BidirectionalRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(16, 5, batch_first=True, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        z, g = self.gru(y)
        return z, h, g


class LayerNorms(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.plain = nn.LayerNorm([3, 8], elementwise_affine=False)

    def forward(self, x):
        return self.plain(self.norm(x))


class Unsupported(nn.Module):
    """aten::logical_xor has no lowering: named by lint and convert, run by Graft with --allow-custom."""

    def forward(self, x):
        return torch.logical_xor(torch.relu(x) > 0.5, x < -0.5).to(torch.float32) * 2


class GrowRows(nn.Module):
    """A list appended to once per row (a trip count known only at run time), read in the loop
    (outs[-1]) and after it: stack, cat, len, indexing. Lowered as an ONNX sequence carried by Loop."""

    def forward(self, x):
        outs: List[torch.Tensor] = [torch.zeros_like(x[0])]
        for i in range(x.size(0)):
            outs.append(torch.relu(x[i]) * float(i + 1) + outs[-1] * 0.5)
        return torch.stack(outs), torch.cat(outs, 0), len(outs), outs[1] - outs[-1]


class WhileAppend(nn.Module):
    """A while loop on data that appends each step and returns the list itself."""

    def forward(self, x):
        steps: List[torch.Tensor] = []
        y = x
        while bool(y.abs().max() < 10.0):
            y = y * 2.0 + 0.5
            steps.append(torch.tanh(y))
        steps.append(y)
        return torch.stack(steps, -1), len(steps), steps


class FilterRows(nn.Module):
    """Rows appended under a data-dependent condition: the If inside the Loop returns the grown list."""

    def forward(self, x):
        kept: List[torch.Tensor] = [x.sum(0) * 0]
        for i in range(x.size(0)):
            if bool(x[i].sum() > 0):
                kept.append(x[i] * 2)
        return torch.stack(kept, 1), len(kept)


class NestedAppend(nn.Module):
    """Appends from an If inside a Loop inside a Loop, then once after: each carries the sequence on."""

    def forward(self, x):
        pieces: List[torch.Tensor] = []
        for i in range(x.size(0)):
            for j in range(x.size(1)):
                if bool(x[i, j] > 0):
                    pieces.append(x[i, j:] * float(i + 1))
        pieces.append(x[0, :1])
        return torch.cat(pieces), len(pieces)


def save_113(name, mode, out, shapes):
    """Called by run-convert.py through /usr/bin/python3."""
    torch.manual_seed(0)
    model = globals()[name]().eval()
    example = tuple(torch.randn(*s) for s in shapes)
    with torch.no_grad():
        script = torch.jit.trace(model, example, check_trace=False) if mode == "traced" else torch.jit.script(model)
    torch.jit.save(script, out)


class SymSizes(nn.Module):
    """Sizes read from a dynamic dim: torch.export writes them as aten.sym_size.int."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 4)

    def forward(self, x):
        y = x.reshape(x.shape[0], x.shape[1] * 4)
        return self.lin(y).view(x.shape[0], 2, 2) + x.shape[0]


class SharedDims(nn.Module):
    """Two inputs sized by one dynamic dim (torch.export gives both the same symbol) and one of their own."""

    def forward(self, x, y):
        return x.reshape(x.shape[0], -1).sum(1, keepdim=True) * y.mean(1, keepdim=True) + y[:, :1]


class CircularPad(nn.Module):
    """mode='circular': Slice + Concat per padded axis before opset 19, Pad mode 'wrap' from 19."""

    def forward(self, x):
        return F.pad(torch.relu(x), [1, 2, 3, 0], mode="circular") * 2


class CircularPadToMultiple(nn.Module):
    """Circular padding by amounts computed from the sizes has no ONNX form before opset 19 (wrap):
    its lowering refuses, and the op is named."""

    def forward(self, x):
        h, w = x.size(2), x.size(3)
        return F.pad(torch.relu(x), [0, (4 - w % 4) % 4, 0, (4 - h % 4) % 4], mode="circular") * 2


# ---- lowerings the zoo's library models need (tests/zoo) ----

class IndexOps(nn.Module):
    """gather, index_select, advanced indexing (one index; broadcast indices from dim 0), diff with
    prepend, argmax, where with a number, triu, repeat, type conversions (to, type_as)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("picks", torch.tensor([[4, 0], [1, 3], [2, 2], [0, 1], [3, 4], [1, 0]]))
        self.register_buffer("rows", torch.tensor([5, 0, 3]))

    def forward(self, x):
        picks = self.picks.unsqueeze(0).expand(x.shape[0], 6, 2)
        a = torch.gather(x, 2, picks) * 2
        b = torch.index_select(x, 1, self.rows) + x[:, self.rows].flip(1)
        y = x.sum(0)
        r = torch.arange(y.shape[0])
        c = torch.arange(y.shape[1])
        grid = y[r[:, None], c[None, :]] - y
        d = torch.diff(x, dim=-1, prepend=x[..., :1])
        best = x.argmax(-1).to(torch.float32) + x[:, :, :1].argmax(1, keepdim=True).type_as(x)
        w = torch.where(x > 0, x, 0.5) + torch.triu(x, 1)
        rep = x[:, :2, :].repeat(1, 2, 1)
        return a, b, grid, d, best, w, rep.to(torch.float64)


class ResizeNorms(nn.Module):
    """Resize (bilinear to a size, nearest by a scale), group_norm, adaptive pooling to an uneven grid,
    leaky_relu / elu, a weight-normed convolution (aten::_weight_norm)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 4)
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv2d(4, 4, 3, padding=1))

    def forward(self, x):
        up = F.interpolate(x, size=(9, 9), mode="bilinear", align_corners=False)
        near = F.interpolate(x, scale_factor=2.0, mode="nearest")
        pooled = F.adaptive_avg_pool2d(F.leaky_relu(self.norm(x), 0.2), (4, 4))
        return up, near, pooled, F.elu(self.conv(x))


class Permute(nn.Module):
    """torchvision's ConvNeXt Permute: the dims are a module attribute."""

    def __init__(self, dims: List[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return torch.permute(x, self.dims)


class SplitsAndGrids(nn.Module):
    """The ConvNeXt permute from a module attribute; chunk of a dim known only at run time; unbind of
    a qkv reshape to a literal 3; meshgrid; unflatten; new_zeros; view_as."""

    def __init__(self):
        super().__init__()
        self.to_last = Permute([0, 2, 3, 1])
        self.qkv = nn.Linear(4, 12)

    def forward(self, x):
        b, c, h, w = x.shape
        tokens = self.to_last(x).reshape(b, h * w, c)
        q, k, v = self.qkv(tokens).reshape(b, h * w, 3, 2, 2).unbind(2)
        first, second = tokens.chunk(2, dim=1)
        gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        grid = (gy * w + gx).to(x.dtype).unflatten(0, (h, 1)).view_as(x[0, :1].squeeze(0).unsqueeze(1))
        zeros = x.new_zeros(b, 2)
        return (q * k + v).sum(-1), first.sum(1) - second.sum(1), grid, zeros + 1


class ShiftedWindows(nn.Module):
    """torchvision's Swin: a shift list copied and zeroed where the window
    covers the input, a roll by it, and the attention mask written slice by
    slice into new_zeros (traced: fill_ on a slice of a slice, scripted:
    copy_ of a tensor). Also a select written through, copy_ of a
    broadcast source, and flat and negative rolls."""

    def __init__(self):
        super().__init__()
        self.window = [3, 3]
        self.shift = [1, 2]

    def forward(self, x, z):
        shift_size = self.shift.copy()
        if self.window[0] >= x.shape[1]:
            shift_size[0] = 0
        if self.window[1] >= x.shape[2]:
            shift_size[1] = 0
        if sum(shift_size) > 0:
            x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
        mask = x.new_zeros((x.shape[1], x.shape[2]))
        h_slices = ((0, -self.window[0]), (-self.window[0], -shift_size[0]), (-shift_size[0], None))
        w_slices = ((0, -self.window[1]), (-self.window[1], -shift_size[1]), (-shift_size[1], None))
        count = 0
        for h in h_slices:
            for w in w_slices:
                mask[h[0]:h[1], w[0]:w[1]] = count
                count += 1
        mask[1] = -2.0
        mask[:, 0].fill_(7.0)
        y = x.clone()
        y[:, 1:3].copy_(z)
        return x + mask[None, :, :, None], torch.roll(y, 5), y.roll(-1, 0)


class Pool3d(nn.Module):
    """r3d_18's head: adaptive average pooling in 3-D (to 1 and to sizes
    that do not divide), and in 1-D."""

    def forward(self, x):
        a = nn.functional.adaptive_avg_pool3d(x, 1)
        b = nn.functional.adaptive_avg_pool3d(x, (2, 3, 2))
        c = nn.functional.adaptive_avg_pool1d(x[:, :, 0, 1], 4)
        return a, b, c


class IndexWithNone(nn.Module):
    """LeViT's attention biases: biases[:, idxs] with a 2-D index, and an
    index after two full slices."""

    def __init__(self):
        super().__init__()
        self.register_buffer("idxs", torch.tensor([[0, 2, 1], [3, 3, 0]]))
        self.register_buffer("pair", torch.tensor([1, 0]))

    def forward(self, x):
        return x[:, self.idxs], x[:, :, self.pair], x[self.idxs[0], :, 1:]


class AutocastOff(nn.Module):
    """timm's EfficientViT: attention computed under
    torch.autocast(enabled=False), which torch.export keeps as a
    wrap_with_autocast node whose body is a submodule graph."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        y = self.proj(x)
        with torch.autocast(device_type="cpu", enabled=False):
            attn = (y.float() @ y.float().transpose(-1, -2)).softmax(-1)
            out = attn @ y.float()
        return out + x


class TensorCache(nn.Module):
    """timm's LeViT / EfficientFormer: a Dict[str, Tensor] the module fills on
    first use (attention_bias_cache), saved empty or filled."""

    cache: Dict[str, torch.Tensor]

    def __init__(self, fill: bool = False):
        super().__init__()
        self.table = nn.Parameter(torch.randn(3, 4))
        self.register_buffer("idx", torch.tensor([[0, 2], [3, 1]]))
        self.cache = {}
        if fill:
            self.eval()(torch.zeros(2, 3))

    def forward(self, x):
        key = str(x.device)
        if key not in self.cache:
            self.cache[key] = self.table[:, self.idx]
        return x + self.cache[key].sum(-1).sum(-1)


class FilledTensorCache(TensorCache):
    """TensorCache saved after a first run filled it (as the zoo's LeViT is)."""

    def __init__(self):
        super().__init__(fill=True)


class FlowOps(nn.Module):
    """RAFT: instance norm, a coordinate grid from linspace, grid_sample
    (bilinear and nearest, zeros, border and reflection padding, both
    align_corners), and a scripted loop over range(2, len(size))."""

    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(3, affine=True)
        self.plain = nn.InstanceNorm2d(3)

    def forward(self, x, grid):
        y = self.norm(x) + self.plain(x)
        size = x.size()
        prod = 1
        for i in range(2, len(size)):
            prod = prod * size[i]
        line = torch.linspace(-1.0, 1.0, x.shape[3]) + torch.linspace(0, 5, 4).sum()
        a = nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = nn.functional.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=True)
        c = nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        d = nn.functional.grid_sample(x, grid * 1.7, mode="bilinear", padding_mode="reflection", align_corners=False)
        e = nn.functional.grid_sample(x, grid * 1.7, mode="nearest", padding_mode="reflection", align_corners=True)
        # sqrt of an integer tensor is float (RAFT's correlation scale)
        return y * prod / torch.sqrt(torch.arange(1, x.shape[3])).sum(), line, a, b, c, d, e


class RuntimeShifts(nn.Module):
    """Scripted Swin's roll by shifts computed from the sizes, and tensor() of numbers, of a size and of
    a list (Swin's mask values, RAFT's channel count)."""

    def forward(self, x):
        rolled = torch.roll(x, shifts=(x.shape[1] // 2, -(x.shape[2] // 3)), dims=(1, 2))
        sizes = torch.tensor([x.shape[1], 2]).to(x.dtype)
        return rolled * torch.tensor(1.5) + sizes.sum() / torch.sqrt(torch.tensor(x.shape[2]))
