#!/usr/bin/env python3
"""Checks synth-model folders against HF transformers on the GPU machine:

    python3 tools/check_synth_hf.py --bin build-device/agentcompile --out $OUT/synth_check.json

For every preset: synthesise it with our binary, load it with AutoModelForCausalLM.from_pretrained
(bf16 on the GPU), compare HF's parameter count with `agentcompile inspect --json`, run a forward
over a 64-token prompt and record activation and logit statistics (the weights must keep
activations realistic: no NaN, hidden-state RMS and logit spread in a sane range). For the tiny
presets also compare HF's float32 logits with `agentcompile logits` (CPU reference) on the same folder.
A preset written PRESET:WEIGHTS (e.g. tiny-qwen3:fp8-block) is synthesised with --weights WEIGHTS:
the check is that transformers loads the FP8 folder (fp8 needs compute capability 9 or more,
fp8-channel the compressed-tensors package) and how far its logits are from ours. transformers
runs FP8 layers with quantized activations (W8A8) where we dequantize the weights (W8A16), and
counts the scales as parameters, so neither the logits nor the counts are expected to match.
Where transformers' FP8 kernels are missing (the `kernels` package), fp8-block folders load with
FineGrainedFP8Config(dequantize=True): W8A16, as ours. A preset that fails is recorded with the
error and the others still run.
"""
import argparse, json, os, shutil, subprocess, tempfile, time

import torch
from transformers import AutoModelForCausalLM

PRESETS = ["tiny-qwen3", "tiny-llama", "tiny-qwen3-moe", "tiny-mixtral", "tiny-qwen3:fp8-block", "tiny-qwen3:fp8-channel",
           "llama-3.2-1b", "qwen3-1.7b", "qwen3-4b"]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--presets", default=",".join(PRESETS))
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = []
    root = tempfile.mkdtemp(prefix="synth-check-")
    for spec in args.presets.split(","):
        preset, _, weights = spec.partition(":")
        d = os.path.join(root, spec.replace(":", "-"))
        t0 = time.time()
        run([args.bin, "synth-model", "--preset", preset, "--out", d, "--seed", "7", "--quiet"] +
            (["--weights", weights] if weights else []))
        synth_s = time.time() - t0
        ours = json.loads(run([args.bin, "inspect", d, "--json"]))
        tiny = preset.startswith("tiny")
        dtype = torch.float32 if tiny and not weights else torch.bfloat16
        kw = {}
        if weights == "fp8-block":
            from transformers import FineGrainedFP8Config
            kw["quantization_config"] = FineGrainedFP8Config(dequantize=True)
        try:
            model = AutoModelForCausalLM.from_pretrained(d, dtype=dtype, attn_implementation="eager", **kw).cuda().eval()
        except Exception as e:  # e.g. compressed-tensors not installed
            entry = {"preset": spec, "error": f"{type(e).__name__}: {e}"[:300]}
            print(json.dumps(entry), flush=True)
            results.append(entry)
            shutil.rmtree(d)
            continue
        hf_params = sum(p.numel() for p in model.parameters())  # shared (tied) tensors counted once
        g = torch.Generator().manual_seed(0)
        prompt = torch.randint(0, model.config.vocab_size, (1, 64), generator=g)
        with torch.no_grad():
            out = model(prompt.cuda(), output_hidden_states=True)
        logits = out.logits[0].float()
        hidden_rms = [float(h[0].float().pow(2).mean().sqrt()) for h in out.hidden_states]
        top2 = torch.topk(logits, 2, dim=-1).values
        entry = {
            "preset": spec, "synth_seconds": round(synth_s, 1),
            "hf_parameters": hf_params, "our_parameters": ours["parameters"],
            "parameters_match": hf_params == ours["parameters"],
            "logit_std": float(logits.std()), "logit_absmax": float(logits.abs().max()),
            "median_top2_margin": float((top2[:, 0] - top2[:, 1]).median()),
            "hidden_rms_per_layer": [round(x, 3) for x in hidden_rms],
            "finite": bool(torch.isfinite(logits).all()),
        }
        if tiny:
            ids = prompt[0, :24].tolist()
            ref = logits[:24].cpu()
            ours_logits = torch.tensor(json.loads(run([args.bin, "logits", d, "--tokens", ",".join(map(str, ids)),
                                                        "--backend", "cpu", "--json"]))["logits"])
            err = float((ours_logits - ref).abs().max())
            entry["cpu_vs_hf_max_abs_err"] = err
            entry["cpu_vs_hf_rel_err"] = err / float(ref.abs().max())
            entry["cpu_vs_hf_argmax_equal"] = bool((ours_logits.argmax(-1) == ref.argmax(-1)).all())
        print(json.dumps(entry), flush=True)
        results.append(entry)
        del model
        torch.cuda.empty_cache()
        shutil.rmtree(d)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                   "gpu": torch.cuda.get_device_name(0), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
