#!/usr/bin/env python3
"""Peer: HF transformers `generate` in eager PyTorch (no compile), bf16 on the GPU, greedy, on the
same model folder `agentcompile bench e2e` runs. Records per-token times (a stopping criterion
that synchronises and stamps every generated token), the greedy tokens, and, for the semantic
check, a float32 reference (the same stored weights cast to f32, TF32 off) with the top-2 logit
margin and runner-up of each of the first --validate-tokens tokens of every distinct row-0 prompt.

    python3 bench/peers/hf_eager.py --model DIR --workloads W1,W2,W3,W4,W5 --out hf-eager.json
"""
import argparse
import copy
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, StoppingCriteria, StoppingCriteriaList

import common


class Stamps(StoppingCriteria):
    """Called once per generated token (after the whole batch advanced): records a GPU-synchronised time."""

    def __init__(self):
        self.times = []

    def __call__(self, input_ids, scores, **kwargs):
        torch.cuda.synchronize()
        self.times.append(time.perf_counter())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def greedy_config(model, new_tokens):
    gc = copy.deepcopy(model.generation_config)
    gc.do_sample, gc.num_beams = False, 1
    gc.temperature = gc.top_p = gc.top_k = gc.min_p = None
    gc.eos_token_id = None  # generate exactly new_tokens, as agentcompile bench does (--ignore-eos)
    gc.pad_token_id = 0
    gc.max_new_tokens, gc.min_new_tokens = new_tokens, None
    return gc


def timed_generate(model, ids, new_tokens):
    stamps = Stamps()
    mask = torch.ones_like(ids)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, generation_config=greedy_config(model, new_tokens),
                             stopping_criteria=StoppingCriteriaList([stamps]))
    t = [t0] + stamps.times
    prefill_ms = (t[1] - t[0]) * 1e3
    decode_ms = [(b - a) * 1e3 for a, b in zip(t[1:], t[2:])]
    return out[:, ids.shape[1]:].tolist(), prefill_ms, decode_ms


def reference(model, prompt, n):
    ids = torch.tensor([prompt], device="cuda")
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=greedy_config(model, n),
                             output_logits=True, return_dict_in_generate=True)
    tokens, second, margins = [], [], []
    for step, logits in enumerate(out.logits):
        top = torch.topk(logits[0].float(), 2)
        tokens.append(int(out.sequences[0, len(prompt) + step]))
        second.append(int(top.indices[1]))
        margins.append(float(top.values[0] - top.values[1]))
    return {"source": "hf-eager float32 (cuda, tf32 off)", "prompt": prompt, "tokens": tokens, "second": second,
            "margins": margins}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="model folder (the one agentcompile bench runs)")
    ap.add_argument("--name", help="model name runs are matched by (default: the folder's name)")
    ap.add_argument("--workloads", default="W1,W2,W3,W4,W5")
    ap.add_argument("--repeats", type=int, default=1, help="measured runs per workload (default 1)")
    ap.add_argument("--validate-tokens", type=int, default=32)
    ap.add_argument("--attn", default="sdpa", help="attn_implementation (default sdpa, transformers' default)")
    ap.add_argument("--no-reference", action="store_true", help="skip the float32 reference")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    workloads = common.parse_workloads(args.workloads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16, attn_implementation=args.attn)
    model = model.cuda().eval()
    load_s = time.time() - t0
    vocab = model.config.vocab_size
    runs = []
    for name, p, g, b in workloads:
        prompts = [common.synthetic_prompt(p, r, vocab) for r in range(b)]
        ids = torch.tensor(prompts, device="cuda")
        timed_generate(model, ids, min(g, 4))  # warm-up
        prefill, decode, tokens = [], [], None
        for _ in range(args.repeats):
            toks, pre, dec = timed_generate(model, ids, g)
            prefill.append(pre)
            decode.extend(dec)
            tokens = tokens or toks
        runs.append({"workload": name, "prompt": p, "gen": g, "batch": b, "prompts": prompts, "tokens": tokens,
                     "prefill_ms": prefill, "decode_ms": decode})
        print(f"hf-eager {common.model_name(args.model)} {name}: prefill {common.median(prefill):.2f} ms, "
              f"decode {common.median(decode):.3f} ms/token", flush=True)
    refs, ref_error = [], None
    if not args.no_reference:
        try:  # the timed runs are kept even when the float32 copy does not fit or fails
            model = model.float()
            seen = set()
            for name, p, g, b in workloads:
                prompt = common.synthetic_prompt(p, 0, vocab)
                if tuple(prompt) in seen:
                    continue
                seen.add(tuple(prompt))
                refs.append(reference(model, prompt, min(args.validate_tokens, g)))
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            ref_error = f"{type(e).__name__}: {e}"
            print(f"hf-eager: no float32 reference: {ref_error}", flush=True)
    common.write_record(args.out, {
        "schema": "agentcompile.peer/1", "peer": "hf-eager", "model": args.name or common.model_name(args.model),
        "model_dir": args.model, "parameters": sum(p.numel() for p in model.parameters()),
        "environment": common.environment(torch, transformers, {"attn_implementation": args.attn, "dtype": "bfloat16",
                                                                "load_s": round(load_s, 1),
                                                                "reference_error": ref_error}),
        "runs": runs, "references": refs})


if __name__ == "__main__":
    main()
