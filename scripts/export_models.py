#!/usr/bin/env python3
"""Exports small real models the way users do, for `vigil run`.

Each model is exported with torch's defaults (the dynamo exporter, weights
in `model.onnx.data` beside the model), from random weights and small
configs (nothing is downloaded), into OUT_DIR/<name>/model.onnx with a
`test_data_set_0/` whose expected outputs are onnxruntime's:

    python3 -m venv venv && venv/bin/pip install torch torchvision transformers onnx onnxruntime onnxscript
    venv/bin/python scripts/export_models.py [--size N] OUT_DIR [NAME ... | fixtures]
    vigil run OUT_DIR --mode validate

Never a dependency of `cargo test`: the fixtures it wrote and that pass are
committed under tests/fixtures/onnx-models/ (see docs/onnx.md).
"""

import os
import sys
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

torch.manual_seed(0)


def text_inputs(vocab, batch=2, seq=7):
    ids = torch.randint(0, vocab, (batch, seq), dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[1, seq - 2 :] = 0  # the second sequence is padded
    return ids, mask


class Logits(torch.nn.Module):
    """A transformers model called with (input_ids, attention_mask), giving
    one tensor (the exporter flattens ModelOutput, but a plain output keeps
    the graph's outputs obvious)."""

    def __init__(self, m, field):
        super().__init__()
        self.m = m
        self.field = field
        self.eval()

    def forward(self, input_ids, attention_mask):
        return getattr(self.m(input_ids=input_ids, attention_mask=attention_mask), self.field)


def bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=100,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        max_position_embeddings=64,
    )
    m = Logits(BertModel(cfg).eval(), "last_hidden_state")
    return m, text_inputs(100), ["input_ids", "attention_mask"], True


def gpt2():
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=100, n_embd=128, n_layer=2, n_head=2, n_positions=64, use_cache=False)
    m = Logits(GPT2Model(cfg).eval(), "last_hidden_state")
    return m, text_inputs(100), ["input_ids", "attention_mask"], True


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    # feat_extract_norm="group" (the base model's) is a GroupNorm with one
    # group per channel, which the exporter writes as InstanceNormalization.
    cfg = Wav2Vec2Config(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        conv_dim=(32, 32, 32),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        feat_extract_norm="group",
        do_stable_layer_norm=False,
    )

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Wav2Vec2Model(cfg).eval()

        def forward(self, input_values):
            return self.m(input_values=input_values).last_hidden_state

    return Enc().eval(), (torch.randn(1, 1600),), ["input_values"], False


def vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
    )

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = ViTModel(cfg, add_pooling_layer=False).eval()

        def forward(self, pixel_values):
            return self.m(pixel_values=pixel_values).last_hidden_state

    return Enc().eval(), (torch.randn(1, 3, 32, 32),), ["pixel_values"], False


# `--size N` exports every vision model at N x N (the benchmark's 224).
SIZE = None


def vision(name, size=64, **kw):
    def make():
        import torchvision

        m = getattr(torchvision.models, name)(weights=None, **kw).eval()
        n = SIZE or size
        return m, (torch.randn(1, 3, n, n),), ["x"], False

    return make


MODELS = {
    "bert": bert,
    "gpt2": gpt2,
    "wav2vec2": wav2vec2,
    "resnet18": vision("resnet18"),
    "mobilenet_v3_small": vision("mobilenet_v3_small"),
    "swin_t": vision("swin_t", 224),
    "efficientnet_b0": vision("efficientnet_b0", 224),
    "convnext_tiny": vision("convnext_tiny", 224),
    "vit_b_16": vision("vit_b_16", 224),
    # Small enough to commit: half the channels, 10 classes.
    "mobilenet_v3_small_half": vision("mobilenet_v3_small", width_mult=0.5, num_classes=10),
    "vit": vit,
}

# Exported as the model named, then quantized by onnxruntime.quantization:
# weights to int8 and activations quantized at run time (quantize_dynamic:
# DynamicQuantizeLinear, MatMulInteger), as users shrink a transformer.
QUANTIZED = {"bert_dynamic_int8": "bert"}

# What tests/fixtures/onnx-models/ holds (at most 10 MB in all).
FIXTURES = ["bert", "gpt2", "wav2vec2", "mobilenet_v3_small_half", "vit", "bert_dynamic_int8"]


def save(t, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t).SerializeToString())


def export(name, out_dir):
    if name in QUANTIZED:
        return export_quantized(name, QUANTIZED[name], out_dir)
    model, args, names, dynamic = MODELS[name]()
    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    kw = {}
    if dynamic:
        batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", max=64)
        kw["dynamic_shapes"] = {n: {0: batch, 1: seq} for n in names}
    with torch.no_grad():
        # torch's defaults: dynamo exporter, external data.
        torch.onnx.export(model, args, path, input_names=names, **kw)
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    with torch.no_grad():
        want = model(*args)
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    torch_err = max(float(np.abs(g - w.numpy()).max()) for g, w in zip(got, want))
    for k, n in enumerate(names):
        save(feeds[n], os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
    for k, g in enumerate(got):
        save(g, os.path.join(d, "test_data_set_0", f"output_{k}.pb"))
    m = onnx.load(path, load_external_data=False)
    ops = sorted({n.op_type for n in m.graph.node})
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    print(f"{name}: opset {m.opset_import[0].version}, {len(m.graph.node)} nodes, {size / 1e6:.1f} MB, "
          f"torch vs onnxruntime max abs err {torch_err:.2e}; ops {' '.join(ops)}")


def export_quantized(name, base, out_dir):
    """`base` exported as above into a scratch directory, then quantized
    into OUT_DIR/<name>/model.onnx (one file), fed the same inputs, with
    onnxruntime's outputs of the quantized model as the expected ones."""
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        export(base, tmp)
        src = os.path.join(tmp, base)
        path = os.path.join(d, "model.onnx")
        quantize_dynamic(os.path.join(src, "model.onnx"), path, weight_type=QuantType.QInt8)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {}
        for k, i in enumerate(sess.get_inputs()):
            t = onnx.TensorProto()
            with open(os.path.join(src, "test_data_set_0", f"input_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            feeds[i.name] = numpy_helper.to_array(t)
            save(feeds[i.name], os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
        got = sess.run(None, feeds)
        for k, g in enumerate(got):
            save(g, os.path.join(d, "test_data_set_0", f"output_{k}.pb"))
    m = onnx.load(path)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{name}: quantized {base}, {len(m.graph.node)} nodes, {os.path.getsize(path) / 1e6:.1f} MB; ops {' '.join(ops)}")


def main():
    global SIZE
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "--size":
        SIZE, args = int(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    out_dir, names = args[0], args[1:] or list(MODELS)
    if names == ["fixtures"]:
        names = FIXTURES
    failed = 0
    for n in names:
        try:
            export(n, out_dir)
        except Exception:
            failed += 1
            print(f"{n}: export failed: {traceback.format_exc().strip().splitlines()[-1]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
