"""Writes a weights-only PyTorch file (torch.save of a state_dict), for the
window's no-graph state. Usage: make-state-dict.py OUT.pt"""
import sys

import torch


def main():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 4)
    torch.save(layer.state_dict(), sys.argv[1])


if __name__ == "__main__":
    main()
