#!/usr/bin/env python3
"""Load generator for an OpenAI-compatible server (`agentcompile serve`, or any peer that speaks the
same API): at each concurrency C, C clients each send --requests streamed completions one after
another, W2-like by default (a prompt of 128 random token ids, 128 generated tokens with
ignore_eos, greedy). Reports aggregate generated tokens/s over the level's wall time, time to first
token and inter-token latency (p50/p99; the gap between two streamed chunks), and the prompt tokens
the server found cached. Standard library only (it runs where the server runs, without pip).

Clients run as threads in several processes (--procs), so the client's own interpreter does not
pace the stream at high concurrency; times are CLOCK_MONOTONIC, shared by the processes.

    python3 bench/serve_bench.py --url http://127.0.0.1:8080 --model m --concurrency 1,8,32,64 \\
        --json-out serve.json --md-out serve.md
"""
import argparse
import http.client
import json
import multiprocessing as mp
import random
import sys
import threading
import time
import urllib.parse


def one_request(host, port, body, api_key):
    """One streamed completion: (submit, first chunk, [chunk times], end, usage) or an error string."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    t0 = time.monotonic()
    try:
        conn.request("POST", "/v1/completions", body=body, headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            return {"error": f"HTTP {resp.status}: {resp.read()[:200]!r}"}
        chunks, usage, finish = [], None, None
        for line in resp:
            if not line.startswith(b"data: "):
                continue
            if line.startswith(b"data: [DONE]"):
                break
            t = time.monotonic()
            j = json.loads(line[6:])
            if j.get("choices"):
                chunks.append(t)
                finish = j["choices"][0].get("finish_reason") or finish
            if j.get("usage"):
                usage = j["usage"]
        end = time.monotonic()
    except (OSError, http.client.HTTPException, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        conn.close()
    if not chunks or not usage:
        return {"error": "no chunks or no usage in the stream"}
    return {"submit": t0, "chunks": chunks, "end": end, "finish": finish,
            "completion_tokens": usage["completion_tokens"], "prompt_tokens": usage["prompt_tokens"],
            "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)}


def worker(args, clients, barrier, out_q):
    """Runs `clients` (their indices) as threads once every process is ready."""
    url = urllib.parse.urlparse(args.url)
    results = []
    lock = threading.Lock()

    def client(c):
        # Distinct prompts at every level: no request finds another's prompt in the cache.
        rng = random.Random((args.seed * 1000 + args.level) * 100003 + c)
        for k in range(args.requests):
            prompt = [rng.randrange(args.min_id, args.vocab) for _ in range(args.prompt_tokens)]
            body = json.dumps({"model": args.model, "prompt": prompt, "max_tokens": args.gen_tokens,
                               "temperature": 0, "ignore_eos": True, "stream": True,
                               "stream_options": {"include_usage": True}})
            r = one_request(url.hostname, url.port, body, args.api_key)
            r["client"], r["k"] = c, k
            with lock:
                results.append(r)

    barrier.wait()
    threads = [threading.Thread(target=client, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out_q.put(results)


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def level(args, concurrency):
    args = argparse.Namespace(**vars(args), level=concurrency)
    procs = max(1, min(args.procs, concurrency))
    groups = [list(range(concurrency))[i::procs] for i in range(procs)]
    barrier = mp.Barrier(procs)
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(args, g, barrier, q)) for g in groups]
    for p in ps:
        p.start()
    results = []
    for _ in ps:
        results += q.get()
    for p in ps:
        p.join()
    ok = [r for r in results if "error" not in r]
    errors = [r["error"] for r in results if "error" in r]
    row = {"concurrency": concurrency, "requests": len(results), "errors": len(errors),
           "first_errors": errors[:3]}
    if not ok:
        return row
    start = min(r["submit"] for r in ok)
    end = max(r["end"] for r in ok)
    tokens = sum(r["completion_tokens"] for r in ok)
    ttft = [1000 * (r["chunks"][0] - r["submit"]) for r in ok]
    itl = [1000 * (b - a) for r in ok for a, b in zip(r["chunks"], r["chunks"][1:])]
    row.update({
        "wall_s": end - start,
        "generated_tokens": tokens,
        "tokens_per_s": tokens / (end - start),
        "ttft_ms_p50": pct(ttft, 50), "ttft_ms_p99": pct(ttft, 99),
        "itl_ms_p50": pct(itl, 50), "itl_ms_p99": pct(itl, 99),
        "prompt_tokens": sum(r["prompt_tokens"] for r in ok),
        "cached_tokens": sum(r["cached_tokens"] for r in ok),
        "short_requests": sum(1 for r in ok if r["completion_tokens"] != args.gen_tokens),
    })
    return row


def markdown(rows, args):
    lines = [f"Streamed completions, prompt {args.prompt_tokens} token ids, {args.gen_tokens} generated "
             f"(ignore_eos, greedy), {args.requests} requests per client, against {args.url}.", "",
             "| streams | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | requests | errors |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
    for r in rows:
        lines.append(f"| {r['concurrency']} | {f(r.get('tokens_per_s'), 0)} | {f(r.get('ttft_ms_p50'))} | "
                     f"{f(r.get('ttft_ms_p99'))} | {f(r.get('itl_ms_p50'), 2)} | {f(r.get('itl_ms_p99'), 2)} | "
                     f"{r['requests']} | {r['errors']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--model", required=True, help="the served model's name")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--concurrency", default="1,8,32,64", help="comma-separated stream counts")
    ap.add_argument("--requests", type=int, default=2, help="requests per client at each level")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=150000, help="prompt ids are drawn below this")
    ap.add_argument("--min-id", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--procs", type=int, default=8, help="client processes")
    ap.add_argument("--warmup", type=int, default=1, help="requests sent first, not counted")
    ap.add_argument("--json-out")
    ap.add_argument("--md-out")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",") if x]
    if not levels or min(levels) < 1 or args.requests < 1 or args.prompt_tokens < 1 or args.gen_tokens < 1:
        sys.exit("error: concurrency, requests, prompt and generated tokens must be at least 1")
    if args.warmup:
        w = argparse.Namespace(**vars(args))
        w.requests, w.seed = args.warmup, args.seed + 7919
        level(w, 1)
    rows = []
    for c in levels:
        row = level(args, c)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "first_errors"}), flush=True)
        if row["errors"]:
            print(f"  errors: {row['first_errors']}", file=sys.stderr, flush=True)
    report = {"url": args.url, "model": args.model, "prompt_tokens": args.prompt_tokens,
              "gen_tokens": args.gen_tokens, "requests_per_client": args.requests, "levels": rows}
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)
    md = markdown(rows, args)
    if args.md_out:
        with open(args.md_out, "w") as f:
            f.write(md)
    print(md)
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
