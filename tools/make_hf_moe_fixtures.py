#!/usr/bin/env python3
"""The HF-transformers reference fixtures of the mixture-of-experts architectures, in the format
of tools/make_hf_fixtures.py. Run on the GPU machine (it has torch + transformers), from the repository root:

    python3 tools/make_hf_moe_fixtures.py --out $OUT/hf_moe_fixtures.tar.gz

then unpack into tests/fixtures/hf/ and add the two names to the fixture list of
tests/unit/test_hf_fixtures.cpp (and the table of tests/fixtures/hf/README.md).

Each fixture is a tiny random model folder with its weights stored under the Hub's per-expert
names (mlp.experts.{e}.gate_proj / block_sparse_moe.experts.{e}.w1 ...), whatever layout this
transformers version keeps in memory (5.x packs the experts into 3-D gate_up_proj / down_proj
parameters and converts when loading), plus what HF computes from that folder in float32 on the
CPU: teacher-forced logits, greedy tokens and margins (expected.safetensors, expected.json).

The routers get a larger scale than the other projections so that the top-k picks differ from
token to token and the greedy margins stay clear of ties between experts.
"""
import os, sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_fixtures as base  # noqa: E402  (new_fixture_model, record_expected, write_archive)

FIXTURES = {
    # qwen3_moe: 6 experts, 2 per token, renormalised; layer 1 dense (mlp_only_layers), layers 0
    # and 2 sparse; q/k norm, head_dim 24 != 64/4.
    "qwen3_moe_e6k2_dense1": dict(form="4.x", dtype="bfloat16", config={
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
        "intermediate_size": 96, "moe_intermediate_size": 40, "num_experts": 6, "num_experts_per_tok": 2,
        "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [1],
        "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
        "vocab_size": 320, "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
        "use_sliding_window": False, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}),
    # mixtral: 4 experts top-2, a sliding window of 20 inside the 88-token greedy sequence.
    "mixtral_e4_window20": dict(form="4.x", dtype="bfloat16", config={
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 64,
        "intermediate_size": 80, "num_local_experts": 4, "num_experts_per_tok": 2,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 288, "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "sliding_window": 20,
        "router_jitter_noise": 0.0, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}),
}


def hub_state_dict(model, cfg):
    """The state dict under the Hub's per-expert names (split packed 5.x expert parameters)."""
    mixtral = cfg.model_type == "mixtral"
    block = "block_sparse_moe" if mixtral else "mlp"
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    out = {}
    for k, v in model.state_dict().items():
        k = k.replace(".mlp.", f".{block}.") if mixtral else k  # mixtral has no dense MLP
        k = k.replace(f".{block}.router.", f".{block}.gate.")  # in case the router is called router
        if k.endswith(".experts.gate_up_proj"):  # [E, 2F, H]: gate rows first, then up
            prefix, f = k[: -len("gate_up_proj")], v.shape[1] // 2
            for e in range(v.shape[0]):
                out[f"{prefix}{e}.{names[0]}.weight"] = v[e, :f].clone()
                out[f"{prefix}{e}.{names[1]}.weight"] = v[e, f:].clone()
        elif k.endswith(".experts.down_proj"):  # [E, H, F]
            prefix = k[: -len("down_proj")]
            for e in range(v.shape[0]):
                out[f"{prefix}{e}.{names[2]}.weight"] = v[e].clone()
        else:
            out[k] = v
    return out


def make_fixture(name, spec, seed, root):
    d, cfg, model = base.new_fixture_model(name, spec, seed, root)
    g = torch.Generator().manual_seed(seed + 7)
    store_dtype = getattr(torch, spec["dtype"])
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".gate.weight") or n.endswith(".router.weight"):  # routers: logits spread about 2
                p.copy_(2.0 / p.shape[1] ** 0.5 * torch.randn(p.shape, generator=g))
            elif p.dim() == 3:  # packed experts (5.x): init_weights only handles 2-D weights
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[2] ** 0.5)
            p.copy_(p.to(store_dtype).to(torch.float32))
    state = {k: v.to(store_dtype).contiguous() for k, v in hub_state_dict(model, cfg).items()}
    save_file(state, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})

    # HF reads the Hub layout back; the fixture is what that reload computes.
    reloaded = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    base.record_expected(name, reloaded, cfg, spec, seed, d)


if __name__ == "__main__":
    base.write_archive(FIXTURES, make_fixture, 2000)
