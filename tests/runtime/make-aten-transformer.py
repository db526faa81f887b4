"""Writes small transformers as PyTorch files for test-aten-transformer.c:
for each of t5 (transformers' T5EncoderModel: T5LayerNorm, relative
position bias, aten::scaled_dot_product_attention with a float mask),
llama (LlamaModel with eager attention: LlamaRMSNorm with its casts,
matmul → mul → add mask → softmax(dtype=float32) → to → dropout → matmul,
rotary tables and the causal mask from the input's size) and declined
(a module whose patterns the fused kernels must decline or leave to the
plain kernel: a softmax over another axis than the last, an RMSNorm over
the first axis, scaled_dot_product_attention with a bool mask and with
is_causal), OUT/NAME/traced.pt (torch.jit.trace) and OUT/NAME/exported.pt2
(torch.export), the input OUT/NAME/x.npy and torch's output OUT/NAME/y.npy.
Usage: make-aten-transformer.py OUT"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Hidden(nn.Module):
    """A transformers model's last hidden state for its input_ids."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


class Declined(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 48)
        self.scale = nn.Parameter(torch.rand(16) + 0.5)

    def forward(self, x):
        # x [2, 6, 16]
        q, k, v = self.proj(x).view(2, 6, 3, 16).permute(2, 0, 1, 3)
        q, k, v = (t.reshape(2, 6, 2, 8).transpose(1, 2) for t in (q, k, v))
        # attention whose softmax is over the queries' axis: the pattern
        # matches and the fused kernel declines
        scores = torch.matmul(q, k.transpose(-1, -2)) * 0.25
        a = torch.matmul(torch.softmax(scores, dim=-2), v)
        # RMSNorm over the first axis: declined
        r = a.transpose(1, 2).reshape(2, 6, 16)
        n = r * torch.rsqrt(r.pow(2).mean(0, keepdim=True) + 1e-6) * self.scale
        # a bool mask (the plain kernel), and is_causal (the blocked one)
        keep = torch.ones(6, 6, dtype=torch.bool).tril()
        b = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        c = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return n + (b + c).transpose(1, 2).reshape(2, 6, 16)


def models():
    import transformers
    torch.manual_seed(0)
    t5 = transformers.T5EncoderModel(transformers.T5Config(
        vocab_size=50, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        relative_attention_num_buckets=8, use_cache=False)).eval()
    torch.manual_seed(0)
    llama = transformers.LlamaModel(transformers.LlamaConfig(
        vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=32, use_cache=False)).eval()
    llama.config._attn_implementation = "eager"
    tokens = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    return [("t5", Hidden(t5), tokens), ("llama", Hidden(llama), tokens),
            ("declined", Declined().eval(), torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(2)))]


def main():
    out = sys.argv[1]
    for name, model, x in models():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            np.save(os.path.join(d, "x.npy"), x.numpy())
            np.save(os.path.join(d, "y.npy"), model(x).numpy())
            torch.jit.save(torch.jit.trace(model, (x,), check_trace=False, strict=False),
                           os.path.join(d, "traced.pt"))
            torch.export.save(torch.export.export(model, (x,), strict=False), os.path.join(d, "exported.pt2"))


if __name__ == "__main__":
    main()
