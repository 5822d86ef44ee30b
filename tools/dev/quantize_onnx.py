#!/usr/bin/python3
"""ONNX Runtime's int8 peer: an exported encoder (model.onnx) with every weight product made dynamic int8.

    tools/dev/quantize_onnx.py IN.onnx OUT.onnx

Each MatMul by a constant [K, N] weight, and each Gemm by a constant weight (transB = 1: [N, K]), becomes
ONNX Runtime's com.microsoft.DynamicQuantizeMatMul: the activations quantized to u8 per tensor at run time
(DynamicQuantizeLinear inside the op), the weights to s8 per output column here, symmetric
(scale_n = max_k |W[k, n]| / 127, zero point 0), int32 sums, the bias added in float. This is the graph
onnxruntime.quantization.quantize_dynamic(per_channel=True) writes for these products (that Python package
is not installable here; python3-onnx is). The attention products (q·kᵀ, weights·v) have no constant
operand and stay in float, as in ordo's --compute-type int8.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main():
    src, dst = sys.argv[1], sys.argv[2]
    m = onnx.load(src)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    nodes, replaced = [], 0
    for n in g.node:
        weight = n.input[1] if len(n.input) > 1 else None
        if n.op_type in ("MatMul", "Gemm") and weight in inits and len(inits[weight].dims) == 2:
            w = numpy_helper.to_array(inits[weight]).astype(np.float64)
            if n.op_type == "Gemm":
                attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                    nodes.append(n)
                    continue
                if attrs.get("transB", 0):
                    w = w.T  # [K, N]
            scale = np.abs(w).max(axis=0) / 127.0
            scale[scale == 0] = 1.0
            q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
            base = f"{n.name or weight}_int8"
            g.initializer.extend([numpy_helper.from_array(q, base + "_w"),
                                  numpy_helper.from_array(scale.astype(np.float32), base + "_scale"),
                                  numpy_helper.from_array(np.zeros_like(q[0]), base + "_zp")])
            inputs = [n.input[0], base + "_w", base + "_scale", base + "_zp"]
            if n.op_type == "Gemm" and len(n.input) > 2 and n.input[2]:
                inputs.append(n.input[2])
            nodes.append(helper.make_node("DynamicQuantizeMatMul", inputs, list(n.output), name=base,
                                          domain="com.microsoft"))
            replaced += 1
        else:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    if not any(o.domain == "com.microsoft" for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(m, dst)
    print(f"{dst}: {replaced} weight products in int8")


if __name__ == "__main__":
    main()
