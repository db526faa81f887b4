"""Writes data/aten-schemas.tsv, the argument names and types of every
aten operator, from the operator registry of the torch that runs it
(torch._C._jit_get_all_schemas(), the facts PyTorch publishes in its
native_functions.yaml). Graft labels TorchScript nodes with these names
(stride = [2, 2], weight, bias) instead of positions.

  tests/python data/make-aten-schemas.py data/aten-schemas.tsv
  tests/python data/make-aten-schemas.py --check data/aten-schemas.tsv

One schema a line, tab-separated: the operator, its overload name (empty
for the default one), then one field per argument, "name:type", with a
leading "*" if it is keyword-only and a trailing "=" if it has a default.
Variants that write into an out= tensor are left out: TorchScript models
call the functional ones."""
import torch

from generated_data import write_or_check


def is_out_variant(schema):
    overload = schema.overload_name
    return overload == "out" or overload.endswith("_out") or any(
        argument.kwarg_only and argument.name == "out" for argument in schema.arguments)


def lines():
    header = f"# aten operator schemas of torch {torch.__version__}, made by data/make-aten-schemas.py\n"
    rows = []
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::") or is_out_variant(schema):
            continue
        fields = [schema.name, schema.overload_name]
        for argument in schema.arguments:
            field = f"{'*' if argument.kwarg_only else ''}{argument.name}:{argument.type}"
            if argument.has_default_value():
                field += "="
            fields.append(field)
        rows.append("\t".join(fields) + "\n")
    return header + "".join(sorted(set(rows)))


def main():
    write_or_check(lines(), f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
