"""Writes an ONNX model whose initializers hold known values of every kind
the sidebar must show exactly (float16, bfloat16, int8, bool, uint8, int64
beyond 2^53, a float32 matrix with zeros) and a 100 MB float32 embedding
(25000 × 1024, seeded), for the weight-values tests.
Usage: make-weights-model.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def bfloat16_tensor(name, values):
    bits = (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return helper.make_tensor(name, TensorProto.BFLOAT16, [len(values)], bits.tobytes(), raw=True)


def main():
    rng = np.random.default_rng(0)
    embedding = rng.standard_normal((25000, 1024), dtype=np.float32)
    initializers = [
        numpy_helper.from_array(embedding, "embedding.weight"),
        numpy_helper.from_array(np.array([[1.5, -2, 0], [0.25, 4, 0]], dtype=np.float32), "scale"),
        numpy_helper.from_array(np.array([0.5, -1.25, 65504, 2 ** -14], dtype=np.float16), "half"),
        bfloat16_tensor("brain", [1.0, -2.5, 3.140625]),
        numpy_helper.from_array(np.array([-128, 127, 0, 5, -3], dtype=np.int8), "small_ints"),
        numpy_helper.from_array(np.array([True, False, True, True]), "mask"),
        numpy_helper.from_array(np.array([2 ** 53 + 1, -7, 0], dtype=np.int64), "ids"),
        numpy_helper.from_array(np.arange(3 * 40, dtype=np.uint8).reshape(3, 40), "wide"),
    ]
    nodes = [helper.make_node("Gather", ["embedding.weight", "tokens"], ["embedded"], name="embed")]
    outputs = [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, 4, 1024])]
    for tensor in initializers[1:]:
        out = tensor.name + "_f"
        nodes.append(helper.make_node("Cast", [tensor.name], [out], name="cast_" + tensor.name,
                                      to=TensorProto.FLOAT))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, list(tensor.dims)))
    graph = helper.make_graph(nodes, "weights", [helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, 4])],
                              outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make-weights-model")
    onnx.checker.check_model(model)
    with open(sys.argv[1], "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
