"""Writes a state_dict (torch.save) with known values for the weight-values
tests: a float32 matrix, a bfloat16 vector, a bool mask and an int64 counter.
Usage: make-weights-state-dict.py OUT.pt"""
import sys

import torch


def main():
    state = {
        "encoder.weight": torch.tensor([[1.5, -2.0, 0.0], [0.25, 4.0, 0.0]]),
        "encoder.scale": torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16),
        "encoder.mask": torch.tensor([True, False, True]),
        "num_batches_tracked": torch.tensor(9007199254740993, dtype=torch.int64),
    }
    torch.save(state, sys.argv[1])


if __name__ == "__main__":
    main()
