"""A ViT-B/16 (torchvision's vit_b_16 architecture and module names, random
weights) traced and scripted, for bench-diff:

    make-vit-pair.py OUTDIR

writes vit_b_16_traced.pt, vit_b_16_scripted.pt and image.npy (1×3×224×224).
torchvision's own model is used where it imports beside the running torch;
elsewhere this file's copy (nn.MultiheadAttention, as torchvision has it).
Files already present and newer than this script are kept.
"""
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

warnings.simplefilter("ignore")
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)


class MLPBlock(nn.Sequential):
    def __init__(self, dim, hidden):
        super().__init__(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.0), nn.Linear(hidden, dim), nn.Dropout(0.0))


class EncoderBlock(nn.Module):
    def __init__(self, heads, dim, hidden):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = MLPBlock(dim, hidden)

    def forward(self, input: torch.Tensor):
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x)
        x = x + input
        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y


class Encoder(nn.Module):
    def __init__(self, seq, layers, heads, dim, hidden):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq, dim).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(*[EncoderBlock(heads, dim, hidden) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, input: torch.Tensor):
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(self, image=224, patch=16, layers=12, heads=12, dim=768, hidden=3072, classes=1000):
        super().__init__()
        self.patch_size = patch
        self.hidden_dim = dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.encoder = Encoder((image // patch) ** 2 + 1, layers, heads, dim, hidden)
        self.heads = nn.Sequential(nn.Linear(dim, classes))

    def forward(self, x: torch.Tensor):
        n, c, h, w = x.shape
        p = self.patch_size
        x = self.conv_proj(x)
        x = x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        x = self.encoder(x)
        return self.heads(x[:, 0])


def make():
    try:
        import torchvision.models as tvm
        return tvm.vit_b_16()
    except Exception:  # ImportError, or torchvision's ops not loading beside this torch
        return VisionTransformer()


def main():
    script_time = os.path.getmtime(__file__)
    names = ("vit_b_16_traced.pt", "vit_b_16_scripted.pt", "image.npy")
    if all(os.path.exists(os.path.join(OUT, n)) and os.path.getmtime(os.path.join(OUT, n)) > script_time for n in names):
        return
    torch.manual_seed(0)
    model = make().eval()
    image = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, image, check_trace=False), os.path.join(OUT, names[0]))
        torch.jit.save(torch.jit.script(model), os.path.join(OUT, names[1]))
    np.save(os.path.join(OUT, names[2]), image.numpy())


main()
