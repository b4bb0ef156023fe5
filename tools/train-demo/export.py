#!/usr/bin/python3
"""Exports a trained checkpoint (train.py's ckpt.pt) as a Hugging Face DeepSeek-V3 model directory.

  export.py --ckpt build/run/ckpt.pt --tokenizer build/tokenizer --out models/demo [--format bf16|fp8]

Writes config.json, model.safetensors, tokenizer.json and tokenizer_config.json. Tensor names are DeepSeek-V3's;
the MTP module is layer num_hidden_layers, with its own copies of the embedding and head it shares in training.
BF16: every tensor rounded to nearest-even, except e_score_correction_bias (F32, as DeepSeek ships it). FP8: the
attention and MLP projections as e4m3 with one weight_scale_inv (F32) per 128×128 block, amax / 448 as DeepSeek's
checkpoint has them; dequantized weight = e4m3 value · scale_inv.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np
import torch

from model import Config, DeepseekV3

FP8_BLOCK = 128
E4M3_MAX = 448.0


def hf_tensors(model):
    """(name, float32 array) in DeepSeek-V3's naming."""
    c, sd = model.c, {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    out = {"model.embed_tokens.weight": sd["embed_tokens.weight"]}

    def block(prefix, p):
        for k, v in sd.items():
            if not k.startswith(prefix):
                continue
            rest = k[len(prefix):]
            if rest in ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):  # stacked routed experts
                for e in range(c.n_routed_experts):
                    out[f"{p}mlp.experts.{e}.{rest[4:]}.weight"] = v[e]
            else:
                out[p + rest] = v

    for i in range(c.num_hidden_layers):
        block(f"layers.{i}.", f"model.layers.{i}.")
    if c.num_nextn_predict_layers:
        p = f"model.layers.{c.num_hidden_layers}."
        out[p + "embed_tokens.weight"] = sd["embed_tokens.weight"]
        for n in ("enorm.weight", "hnorm.weight", "eh_proj.weight"):
            out[p + n] = sd["mtp." + n]
        block("mtp.block.", p)
        out[p + "shared_head.norm.weight"] = sd["mtp.shared_head_norm.weight"]
        out[p + "shared_head.head.weight"] = sd["lm_head.weight"]
    out["model.norm.weight"] = sd["norm.weight"]
    out["lm_head.weight"] = sd["lm_head.weight"]
    return out


def torch_state(c, tensors):
    """The inverse of hf_tensors: a state_dict for DeepseekV3(c) from DeepSeek-V3-named float32 arrays."""
    sd, n = {}, c.num_hidden_layers

    def block(p, prefix, layer_id):
        for k, v in tensors.items():
            if k.startswith(p) and ".experts." not in k and not k[len(p):].startswith(
                    ("embed_tokens", "enorm", "hnorm", "eh_proj", "shared_head")):
                sd[prefix + k[len(p):]] = torch.from_numpy(v)
        if c.is_moe_layer(layer_id):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                sd[f"{prefix}mlp.{proj}"] = torch.from_numpy(
                    np.stack([tensors[f"{p}mlp.experts.{e}.{proj}.weight"] for e in range(c.n_routed_experts)]))

    sd["embed_tokens.weight"] = torch.from_numpy(tensors["model.embed_tokens.weight"])
    for i in range(n):
        block(f"model.layers.{i}.", f"layers.{i}.", i)
    p = f"model.layers.{n}."
    for name in ("enorm.weight", "hnorm.weight", "eh_proj.weight"):
        sd["mtp." + name] = torch.from_numpy(tensors[p + name])
    block(p, "mtp.block.", n)
    sd["mtp.shared_head_norm.weight"] = torch.from_numpy(tensors[p + "shared_head.norm.weight"])
    sd["norm.weight"] = torch.from_numpy(tensors["model.norm.weight"])
    sd["lm_head.weight"] = torch.from_numpy(tensors["lm_head.weight"])
    return sd


# ---- number formats -------------------------------------------------------------------------------------------

def to_bf16_bits(x):
    """float32 → bfloat16 bits, rounding to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def e4m3_value(code):
    """Value of an e4m3fn byte: 1 sign, 4 exponent (bias 7), 3 mantissa bits; 0x7F/0xFF are NaN."""
    e, m = (code >> 3) & 0xF, code & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if code & 0x80 else v


E4M3_POSITIVE = np.array([e4m3_value(c) for c in range(0x7F)])  # codes 0..126, ascending


def to_e4m3(x):
    """float32 (|x| ≤ 448) → e4m3fn bytes, rounding to nearest, ties to the even code."""
    a = np.abs(x).astype(np.float64)
    hi = np.clip(np.searchsorted(E4M3_POSITIVE, a), 0, len(E4M3_POSITIVE) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo, d_hi = a - E4M3_POSITIVE[lo], E4M3_POSITIVE[hi] - a
    code = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo).astype(np.uint8)
    return code | np.where(np.signbit(x) & (code != 0), 0x80, 0).astype(np.uint8)


def quantize_fp8(w):
    """(rows, cols) → e4m3 bytes and scale_inv (ceil(rows/128), ceil(cols/128)): one scale per block."""
    rows, cols = w.shape
    br, bc = -(-rows // FP8_BLOCK), -(-cols // FP8_BLOCK)
    q = np.zeros(w.shape, np.uint8)
    scale = np.ones((br, bc), np.float32)
    for i in range(br):
        for j in range(bc):
            blk = w[i * FP8_BLOCK:(i + 1) * FP8_BLOCK, j * FP8_BLOCK:(j + 1) * FP8_BLOCK]
            amax = float(np.abs(blk).max())
            s = np.float32(amax / E4M3_MAX) if amax > 0 else np.float32(1)
            scale[i, j] = s
            q[i * FP8_BLOCK:(i + 1) * FP8_BLOCK, j * FP8_BLOCK:(j + 1) * FP8_BLOCK] = to_e4m3(np.clip(blk / s, -E4M3_MAX, E4M3_MAX))
    return q, scale


def quantized_in_fp8(name):
    """The projections DeepSeek-V3 stores in FP8: attention and MLP weights, not embeddings, norms, router, head, eh_proj."""
    return name.endswith(("_proj.weight", "_proj_with_mqa.weight")) and "eh_proj" not in name


# ---- safetensors --------------------------------------------------------------------------------------------

def write_safetensors(path, tensors):
    """tensors: name → (dtype string, shape, raw bytes). 8-byte little-endian header length, JSON header, data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, data in tensors.values():
            f.write(data)


def read_safetensors(path):
    """name → float32 array (BF16 and F32 exactly; FP8 dequantized with its block scales)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        raw = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            f.seek(base + info["data_offsets"][0])
            data = f.read(info["data_offsets"][1] - info["data_offsets"][0])
            dt = {"BF16": np.uint16, "F32": np.float32, "F8_E4M3": np.uint8}[info["dtype"]]
            raw[name] = (info["dtype"], np.frombuffer(data, dt).reshape(info["shape"]))
    out = {}
    for name, (dtype, a) in raw.items():
        if name.endswith("_scale_inv"):
            continue
        if dtype == "BF16":
            out[name] = from_bf16_bits(a)
        elif dtype == "F32":
            out[name] = a.copy()
        else:
            s = raw[name + "_scale_inv"][1]
            full = np.repeat(np.repeat(s, FP8_BLOCK, 0), FP8_BLOCK, 1)[:a.shape[0], :a.shape[1]]
            vals = np.array([e4m3_value(c) for c in range(256)], np.float32)
            out[name] = vals[a] * full
    return out


def load_model(directory):
    """A DeepseekV3 holding exactly the numbers of an exported directory, in float32."""
    with open(os.path.join(directory, "config.json")) as f:
        c = Config.from_hf_json(f.read())
    model = DeepseekV3(c)
    model.load_state_dict(torch_state(c, read_safetensors(os.path.join(directory, "model.safetensors"))))
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--summary", help="summary.json of the run, for the config (default: next to --ckpt)")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--format", choices=("bf16", "fp8"), default="bf16")
    args = ap.parse_args()
    summary = args.summary or os.path.join(os.path.dirname(args.ckpt), "summary.json")
    with open(summary) as f:
        config = Config.from_hf_json(json.dumps(json.load(f)["config"]))
    model = DeepseekV3(config)
    model.load_state_dict(torch.load(args.ckpt))
    os.makedirs(args.out, exist_ok=True)
    hf = json.loads(config.hf_json())
    if args.format == "fp8":
        hf["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                     "weight_block_size": [FP8_BLOCK, FP8_BLOCK]}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        f.write(json.dumps(hf, indent=2) + "\n")
    tensors = {}
    for name, w in hf_tensors(model).items():
        if name.endswith("e_score_correction_bias"):
            tensors[name] = ("F32", w.shape, w.astype("<f4").tobytes())
        elif args.format == "fp8" and quantized_in_fp8(name):
            q, s = quantize_fp8(w)
            tensors[name] = ("F8_E4M3", w.shape, q.tobytes())
            tensors[name + "_scale_inv"] = ("F32", s.shape, s.astype("<f4").tobytes())
        else:
            tensors[name] = ("BF16", w.shape, to_bf16_bits(w).astype("<u2").tobytes())
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    size = os.path.getsize(os.path.join(args.out, "model.safetensors"))
    print(f"wrote {args.out}: {len(tensors)} tensors, {size / 1e6:.1f} MB ({args.format})")


if __name__ == "__main__":
    main()
