#!/usr/bin/env python3
"""Makes the HF-transformers reference fixtures for the CPU reference backend (and every backend
checked against it). Run on the GPU machine (it has torch + transformers):

    python3 tools/make_hf_fixtures.py --out $OUT/hf_fixtures.tar.gz

Each fixture is a tiny random model folder as a user would have it (config.json written in the
form under test, model.safetensors in the storage dtype) plus what HF computes from that folder:
expected.safetensors ("logits": teacher-forced logits of the prompt [T, vocab], "greedy_margins":
top-1 minus top-2 logit at each greedy step) and expected.json (prompt, 40 greedy tokens,
versions). The reference runs in float32 on the CPU from the stored (rounded) weights, with TF32
off, eager attention. Unpack into tests/fixtures/hf/.
"""
import argparse, io, json, os, tarfile, tempfile

import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM

PROMPT_LEN = 48
GREEDY_STEPS = 40

# name -> (config.json as written, storage dtype). "form" picks how rope is spelled:
# "4.x": rope_theta/rope_scaling at top level (hand-written, as transformers 4.x saved it);
# "5.x": whatever this transformers version writes with save_pretrained (rope_parameters).
FIXTURES = {
    # llama, GQA 2, head_dim != hidden/heads, tied, llama3 rope with a short original context so
    # that the scaling changes the low frequencies inside a 88-token sequence.
    "llama_gqa2_tied_llama3": dict(form="4.x", dtype="bfloat16", config={
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 256, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
        "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}),
    # qwen3 (q/k norm), GQA 1 (MHA), untied, head_dim 24 with hidden 64, config in the 5.x form.
    "qwen3_mha_untied_5x": dict(form="5.x", dtype="bfloat16", config={
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
        "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "head_dim": 24, "vocab_size": 320, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
        "tie_word_embeddings": False, "attention_bias": False, "use_sliding_window": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}),
    # qwen2 (q/k/v bias), GQA 5, head_dim derived (80/10), f16 storage, 4.x form.
    "qwen2_gqa5_bias_f16": dict(form="4.x", dtype="float16", config={
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 80,
        "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 10,
        "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": None, "hidden_act": "silu",
        "tie_word_embeddings": True, "use_sliding_window": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16"}),
    # llama, GQA 5, untied, f32 storage, llama3 rope, 5.x form, three layers.
    "llama_gqa5_f32_5x": dict(form="5.x", dtype="float32", config={
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 80,
        "intermediate_size": 112, "num_hidden_layers": 3, "num_attention_heads": 5,
        "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 272, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 2.0, "original_max_position_embeddings": 32},
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}),
}


def init_weights(model, seed, tied):
    """Unit-gain random weights (std 1/sqrt(fan_in)), norms near 1: activations and logits in a
    realistic range, unlike the 0.02 default that makes a tiny model's logits almost flat."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif p.dim() == 2:
                scale = 1.0 / p.shape[1] ** 0.5
                if "lm_head" in name or ("embed_tokens" in name and tied):
                    scale = 2.0 / p.shape[1] ** 0.5  # logits with a std of about 2
                elif "embed_tokens" in name:
                    scale = 1.0
                p.copy_(scale * torch.randn(p.shape, generator=g))


def new_fixture_model(name, spec, seed, root):
    """(folder, config, float32 model with init_weights) of a fixture whose config.json is spec's."""
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(spec["config"], f, indent=2)
    cfg = AutoConfig.from_pretrained(d)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="eager")
    init_weights(model, seed, cfg.tie_word_embeddings)
    return d, cfg, model


def make_fixture(name, spec, seed, root):
    d, cfg, model = new_fixture_model(name, spec, seed, root)
    store_dtype = getattr(torch, spec["dtype"])
    with torch.no_grad():  # round every weight to the storage dtype: the f32 reference sees the stored values
        for p in model.parameters():
            p.copy_(p.to(store_dtype).to(torch.float32))
    if spec["form"] == "5.x":  # let this transformers version write config.json its own way
        cfg.save_pretrained(d)
    state = {k: v.to(store_dtype).contiguous() for k, v in model.state_dict().items()}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})

    # Check HF reads back the folder exactly as we will.
    reloaded = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    record_expected(name, reloaded, cfg, spec, seed, d)


def record_expected(name, reloaded, cfg, spec, seed, d):
    """expected.safetensors and expected.json of a fixture folder `d`, from HF's reload of it."""
    reloaded.eval()
    g = torch.Generator().manual_seed(seed + 1)
    prompt = torch.randint(3, cfg.vocab_size, (1, PROMPT_LEN), generator=g)
    # Greedy by hand on raw logits (generate() would add logits processors, e.g. for eos), each
    # step a full forward over the sequence so no cache path is involved.
    with torch.no_grad():
        logits = reloaded(prompt).logits[0].float()
        seq = prompt
        greedy, margins = [], []
        for _ in range(GREEDY_STEPS):
            last = reloaded(seq).logits[0, -1].float()
            top = torch.topk(last, 2)
            greedy.append(int(top.indices[0]))
            margins.append(float(top.values[0] - top.values[1]))
            seq = torch.cat([seq, top.indices[:1].view(1, 1)], dim=1)
    save_file({"logits": logits.contiguous(), "greedy_margins": torch.tensor(margins, dtype=torch.float32)},
              os.path.join(d, "expected.safetensors"))
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"prompt": prompt[0].tolist(), "greedy": greedy, "config_form": spec["form"],
                   "storage_dtype": spec["dtype"], "seed": seed,
                   "transformers": transformers.__version__, "torch": torch.__version__,
                   "reference": "float32 on CPU, eager attention, weights rounded to the storage dtype",
                   "logit_std": float(logits.std()), "min_greedy_margin": min(margins)}, f, indent=2)
    print(f"{name}: logits {tuple(logits.shape)} std {float(logits.std()):.3f}, greedy {greedy[:8]}..., "
          f"min margin {min(margins):.4f}", flush=True)


def write_archive(fixtures, make, first_seed, argv=None):
    """Makes every fixture with make(name, spec, seed, root) and packs them into --out."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="tar.gz to write")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with tempfile.TemporaryDirectory() as root:
        for i, (name, spec) in enumerate(fixtures.items()):
            make(name, spec, first_seed + i, root)
        with tarfile.open(args.out, "w:gz") as tar:
            for name in fixtures:
                tar.add(os.path.join(root, name), arcname=name)
    print("wrote", args.out)


if __name__ == "__main__":
    write_archive(FIXTURES, make_fixture, 1000)
