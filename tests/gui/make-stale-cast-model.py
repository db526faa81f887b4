# z = Cast(Cast(x, double)², float) with value_info calling the double square
# float32 (a stale annotation, as a hand edit leaves): the no-op pass takes
# the last Cast for a Cast to the same type, and Simplify's check must
# refuse the result, naming the pass and the output.
import sys

import onnx
from onnx import TensorProto, helper

nodes = [helper.make_node("Cast", ["x"], ["wide"], name="to_double", to=TensorProto.DOUBLE),
         helper.make_node("Mul", ["wide", "wide"], ["square"], name="square"),
         helper.make_node("Cast", ["square"], ["z"], name="to_float", to=TensorProto.FLOAT)]
graph = helper.make_graph(nodes, "stale", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
                          value_info=[helper.make_tensor_value_info("square", TensorProto.FLOAT, [2, 3])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
