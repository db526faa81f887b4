class IfTensor(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  lin : __torch__.torch.nn.modules.linear.Linear
  def forward(self: __torch__.IfTensor,
    x: Tensor) -> Tensor:
    lin = self.lin
    y = (lin).forward(x, )
    if bool(torch.gt(torch.sum(y), 0)):
      y0 = torch.mul(torch.relu(y), 2)
    else:
      y0 = torch.sub(y, 1)
    return y0
