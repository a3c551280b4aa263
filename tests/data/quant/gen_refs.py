#!/usr/bin/env python3
"""Writes the gguf-py reference files tests/unit/test_quant.c checks hearth's quantization
code against (CI has no gguf-py, so the outputs are committed). For every block type:
TYPE.blocks (random blocks with sane f16 scales) and TYPE.f32 (gguf-py's dequantization of
them); for the types hearth quantizes: TYPE.qin (f32 input) and TYPE.qout (gguf-py's blocks).

    PYTHONPATH=<llama.cpp>/gguf-py /usr/bin/python3 tests/data/quant/gen_refs.py  # apt python3-numpy
"""
import os

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

OUT = os.path.dirname(os.path.abspath(__file__))
# byte offsets of each type's f16 scale fields (d, and dmin / m where the type has one)
SCALES = {
    "Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0],
}
WRITTEN = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]

rng = np.random.default_rng(20240612)


def random_blocks(name, n):
    block, size = GGML_QUANT_SIZES[Q[name]]
    b = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for off in SCALES[name]:
        d = (rng.uniform(-1, 1, size=n) * 0.05).astype(np.float16)
        b[:, off:off + 2] = d.view(np.uint8).reshape(n, 2)
    return b


def quant_input(n):
    x = rng.standard_normal((n, 32)).astype(np.float32)
    x[0] = 0                      # all-zero block: scale 0
    x[1] = np.linspace(-1, 1, 32)  # exact ties
    x[2, 5] = -7.0                 # one large negative outlier
    x[3] = np.abs(x[3])            # one-signed block
    return x.reshape(-1)


for name in SCALES:
    block = GGML_QUANT_SIZES[Q[name]][0]
    b = random_blocks(name, 8 if block == 32 else 4)
    y = dequantize(b.reshape(-1), Q[name]).astype(np.float32)
    b.tofile(os.path.join(OUT, name + ".blocks"))
    y.tofile(os.path.join(OUT, name + ".f32"))
for name in WRITTEN:
    x = quant_input(16)
    quantize(x.reshape(1, -1), Q[name]).tofile(os.path.join(OUT, name + ".qout"))
    x.tofile(os.path.join(OUT, name + ".qin"))
