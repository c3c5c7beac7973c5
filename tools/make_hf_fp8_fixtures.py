#!/usr/bin/env python3
"""The HF-transformers reference fixtures of FP8 checkpoints, in the format of
tools/make_hf_fixtures.py. Run on the GPU machine (it has torch + transformers), from the
repository root:

    python3 tools/make_hf_fp8_fixtures.py --out $OUT/hf_fp8_fixtures.tar.gz

then unpack into tests/fixtures/hf/ and add the names to the fixture list of
tests/unit/test_hf_fixtures.cpp (and the table of tests/fixtures/hf/README.md).

Each fixture folder is an FP8 checkpoint as the Hub ships them: F8_E4M3 projection weights with
their scales, embeddings / norms / lm_head 16-bit, config.json with its quantization_config
(Qwen's block-scaled "fp8", llm-compressor's per-channel "compressed-tensors"). The expected
logits and greedy tokens are what HF's float32 model computes with weight = fp8 value x scale
(W8A16: activations not quantized), the semantics the CPU reference implements. The weights are
quantized here with torch's own float8_e4m3fn conversion, independently of our quantizer.

transformers' own FP8 loading is also tried on the folder (recorded in expected.json under
"hf_native", not used as the reference): with dequantize=True where this version offers it (then
its logits must equal the reference's), else its W8A8 path on the GPU (activations quantized, so
only close).
"""
import json, math, os, sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_fixtures as base  # noqa: E402  (new_fixture_model, record_expected, write_archive)

QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 24, "vocab_size": 320, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
    "use_sliding_window": False, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}
LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 112, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "vocab_size": 288, "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "hidden_act": "silu", "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
    "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}

FIXTURES = {
    # Qwen3-*-FP8 style: 2-D blocks, F32 scale_inv; [32, 40] blocks leave partial edge blocks in
    # every input dimension (64, 96 are not multiples of 40) and in o_proj's output (64 = 2 x 32).
    "qwen3_fp8_block32x40": dict(form="4.x", dtype="bfloat16", config=dict(QWEN3), quant=dict(
        kind="block", block=[32, 40], scale_dtype="float32", scale_suffix="weight_scale_inv",
        config={"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [32, 40]})),
    # llm-compressor FP8_DYNAMIC style: per-output-channel BF16 weight_scale [out, 1], lm_head ignored,
    # tied embeddings (lm_head is the 16-bit embedding).
    "llama_fp8_channel_ct": dict(form="4.x", dtype="bfloat16", config=dict(LLAMA), quant=dict(
        kind="channel", scale_dtype="bfloat16", scale_suffix="weight_scale",
        config={"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
                "config_groups": {"group_0": {"targets": ["Linear"],
                                              "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                                          "symmetric": True, "dynamic": False},
                                              "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                                    "symmetric": True, "dynamic": True}}},
                "ignore": ["lm_head"]})),
}

E4M3_MAX = 448.0
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def quantize(w, q):
    """(fp8 tensor, stored scale, dequantized f32) of a 2-D f32 weight: amax / 448 scales per
    block or per row, rounded to the stored scale dtype, then torch's round-to-nearest-even
    float8_e4m3fn conversion of weight / scale."""
    out_f, in_f = w.shape
    if q["kind"] == "block":
        bo, bi = q["block"]
        scale = torch.empty(math.ceil(out_f / bo), math.ceil(in_f / bi))
        for r in range(scale.shape[0]):
            for c in range(scale.shape[1]):
                scale[r, c] = max(float(w[r * bo:(r + 1) * bo, c * bi:(c + 1) * bi].abs().max()), 1e-12) / E4M3_MAX
        scale = scale.to(getattr(torch, q["scale_dtype"]))
        full = scale.float().repeat_interleave(bo, 0)[:out_f].repeat_interleave(bi, 1)[:, :in_f]
    else:
        scale = (w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / E4M3_MAX).to(getattr(torch, q["scale_dtype"]))
        full = scale.float().expand(out_f, in_f)
    f8 = (w / full).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return f8, scale, f8.float() * full


def hf_native(d, reference_logits, prompt):
    """What transformers' own FP8 loader makes of the folder (informational)."""
    result = {}
    attempts = []
    try:
        from transformers import FineGrainedFP8Config
        attempts.append(("dequantize", dict(quantization_config=FineGrainedFP8Config(dequantize=True)), "cpu"))
    except Exception as e:  # noqa: BLE001
        result["dequantize"] = f"unavailable: {type(e).__name__}: {e}"[:300]
    if torch.cuda.is_available():
        attempts.append(("native_cuda", {}, "cuda"))
    for label, kw, device in attempts:
        try:
            m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16 if device == "cuda" else torch.float32,
                                                     device_map=device, **kw)
            with torch.no_grad():
                got = m(prompt.to(device)).logits[0].float().cpu()
            err = float((got - reference_logits).abs().max())
            result[label] = {"max_abs_diff": err, "reference_scale": float(reference_logits.abs().max()),
                             "top1_agreement": float((got.argmax(-1) == reference_logits.argmax(-1)).float().mean())}
        except Exception as e:  # noqa: BLE001
            result[label] = f"failed: {type(e).__name__}: {e}"[:300]
    return result


def make_fixture(name, spec, seed, root):
    d, cfg, model = base.new_fixture_model(name, spec, seed, root)
    q = spec["quant"]
    state = {}
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
            module = n.rsplit(".", 2)[-2] if n.endswith(".weight") else ""
            if module in PROJECTIONS:
                f8, scale, deq = quantize(p.detach().clone(), q)
                p.copy_(deq)  # the reference computes with fp8 x scale exactly
                state[n] = f8.contiguous()
                state[n[: -len("weight")] + q["scale_suffix"]] = scale.contiguous()
            else:
                state[n] = p.detach().to(torch.bfloat16).contiguous()
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg_dict = dict(spec["config"])
    cfg_dict["quantization_config"] = q["config"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg_dict, f, indent=2)

    base.record_expected(name, model, cfg, spec, seed, d)
    exp = json.load(open(os.path.join(d, "expected.json")))
    exp["reference"] = "float32 on CPU, eager attention, W8A16: each FP8 weight = fp8 value x its stored scale"
    from safetensors.torch import load_file
    ref_logits = load_file(os.path.join(d, "expected.safetensors"))["logits"]
    exp["hf_native"] = hf_native(d, ref_logits, torch.tensor([exp["prompt"]]))
    print(f"{name}: transformers' own FP8 loading: {json.dumps(exp['hf_native'])}", flush=True)
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(exp, f, indent=2)


if __name__ == "__main__":
    base.write_archive(FIXTURES, make_fixture, 3000)
