#!/usr/bin/env python3
"""Peer: compiled PyTorch decode, gpt-fast style, the way ../shared/GPU.md found to work with
transformers 5.17 there: the HF model with a StaticCache; the prompt prefilled eagerly; each decode
step `model(input_ids=tok, past_key_values=cache, cache_position=pos)` + argmax compiled with
torch.compile(mode="reduce-overhead", fullgraph=True) (CUDA graphs), with
torch.compiler.cudagraph_mark_step_begin() before every step. bf16, greedy. One cache (and one
compilation) per batch size, sized for the longest workload of that batch size.

    python3 bench/peers/torch_compiled.py --model DIR --workloads W2 --out torch-compiled.json

With --from-config, DIR needs only config.json (`agentcompile synth-model --config-only`): the model
is built on the GPU with transformers' random initialisation, for presets whose weights no disk
here holds (qwen3-30b-a3b; `bench e2e --in-memory` makes ours in memory). Its timings compare; its
tokens do not (other weights), and the record says so ("weights").
"""
import argparse
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, StaticCache

import common


class Decoder:
    def __init__(self, model, batch, max_len):
        self.model = model
        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self.batch, self.max_len = batch, max_len

        def step(tok, pos):
            logits = model(input_ids=tok, past_key_values=self.cache, cache_position=pos).logits
            return logits[:, -1].argmax(-1, keepdim=True)

        self.step = torch.compile(step, mode="reduce-overhead", fullgraph=True)

    def run(self, ids, new_tokens):
        """Greedy generation: (tokens per row, prefill ms, [decode ms per step])."""
        if hasattr(self.cache, "reset"):  # stale entries past the prompt are masked by cache_position anyway
            self.cache.reset()
        p = ids.shape[1]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            logits = self.model(input_ids=ids, past_key_values=self.cache, cache_position=torch.arange(p, device="cuda")).logits
            tok = logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            t = [time.perf_counter()]
            out = [tok.clone()]
            for i in range(new_tokens - 1):
                torch.compiler.cudagraph_mark_step_begin()
                tok = self.step(tok, torch.tensor([p + i], device="cuda")).clone()  # graph outputs are reused
                torch.cuda.synchronize()
                t.append(time.perf_counter())
                out.append(tok)
        decode_ms = [(b - a) * 1e3 for a, b in zip(t, t[1:])]
        return torch.cat(out, dim=1).tolist(), (t[0] - t0) * 1e3, decode_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--name", help="model name runs are matched by (default: the folder's name)")
    ap.add_argument("--workloads", default="W2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("--from-config", action="store_true",
                    help="build the model from DIR's config.json with random weights on the GPU (timings only)")
    args = ap.parse_args()
    workloads = common.parse_workloads(args.workloads)
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.from_config:
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(args.model), dtype=torch.bfloat16).eval()
    else:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16).cuda().eval()
    vocab = model.config.vocab_size
    decoders, compile_s, runs = {}, {}, []
    for name, p, g, b in workloads:
        if b not in decoders:
            max_len = max(wp + wg for _, wp, wg, wb in workloads if wb == b)
            decoders[b] = Decoder(model, b, max_len)
        dec = decoders[b]
        prompts = [common.synthetic_prompt(p, r, vocab) for r in range(b)]
        ids = torch.tensor(prompts, device="cuda")
        t0 = time.time()
        dec.run(ids, min(g, 8))  # compiles on the first use of this batch size, records the CUDA graphs
        dec.run(ids, min(g, 8))
        compile_s.setdefault(str(b), round(time.time() - t0, 1))
        prefill, decode, tokens = [], [], None
        for _ in range(args.repeats):
            toks, pre, d = dec.run(ids, g)
            prefill.append(pre)
            decode.extend(d)
            tokens = tokens or toks
        runs.append({"workload": name, "prompt": p, "gen": g, "batch": b, "prompts": prompts, "tokens": tokens,
                     "prefill_ms": prefill, "decode_ms": decode, "cache_len": dec.max_len})
        print(f"torch-compiled {common.model_name(args.model)} {name}: prefill {common.median(prefill):.2f} ms, "
              f"decode {common.median(decode):.3f} ms/token (compile+warm-up {compile_s[str(b)]} s)", flush=True)
    common.write_record(args.out, {
        "schema": "agentcompile.peer/1", "peer": "torch-compiled", "model": args.name or common.model_name(args.model),
        "model_dir": args.model, "parameters": sum(p.numel() for p in model.parameters()),
        "weights": "random (from_config: timings only)" if args.from_config else "from the folder",
        "environment": common.environment(torch, transformers, {"mode": "reduce-overhead", "fullgraph": True,
                                                                "compile_and_warmup_s": compile_s}),
        "runs": runs, "references": []})


if __name__ == "__main__":
    main()
