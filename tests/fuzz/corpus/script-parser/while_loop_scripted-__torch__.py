class WhileLoop(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  def forward(self: __torch__.WhileLoop,
    x: Tensor,
    limit: float) -> Tuple[Tensor, int]:
    _0 = torch.lt(torch.max(torch.abs(x)), limit)
    if bool(_0):
      _1 = True
    else:
      _1 = False
    x0 = x
    k = 0
    _2 = _1
    while _2:
      x1 = torch.add(torch.mul(x0, 2.), 0.5)
      k0 = torch.add(k, 1)
      if torch.eq(k0, 7):
        _3 = False
      else:
        _4 = torch.lt(torch.max(torch.abs(x1)), limit)
        if bool(_4):
          _5 = torch.lt(k0, 10)
        else:
          _5 = False
        _3 = _5
      _2, x0, k = _3, x1, k0
    return (x0, k)
