#pragma once
// The three tiers of `agentcompile bench` (docs/bench.md): e2e (whole generation per workload,
// against the peers, counted only when the semantic check passes), module (one decoder layer,
// prefill and decode) and kernels (each decode region: our fast kernel vs the reference kernel vs
// cuBLAS). Each returns the report as JSON (schema "agentcompile.bench/1").
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/bench/workloads.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac::bench {

struct BenchOptions {
  std::vector<std::string> models;    // folders or synthetic preset names
  std::vector<Workload> workloads;    // e2e
  std::string backend = "auto";       // cpu | cuda | auto
  std::string cuda_route = "fast";    // fast | library | reference | auto
  std::string plan;                   // compiled plan folder (e2e, kernels)
  bool rebuild_kernels = false;       // the plan's kernels compiled from templates, its binaries unread
  std::vector<std::string> peer_files;
  int repeats = 3;                    // measured runs per workload (module: per layer count)
  int warmup = 1;
  double tie_epsilon = 0.1;           // logits; see validator.h
  int validate_tokens = 32;
  // Where the semantic check's reference comes from: "peer" (a --peer record's), "cpu" (the CPU
  // reference backend run here on the weights the engine runs) or "auto" (cpu for weights
  // quantized to FP8, whose 16-bit peers' references are of other weights; peer otherwise).
  std::string reference = "auto";
  bool profile = false;               // e2e: one more, untimed run per row profiled kernel by kernel
  fs::path cache_dir;                 // where presets are synthesised (empty: the default)
  bool in_memory = false;             // presets made in memory, not synthesised into cache_dir
  uint64_t seed = 11;                 // synthesis seed of presets
  int64_t module_prompt = 128;        // module: prefill length, decode context
  int64_t module_steps = 64;          // module: decode steps per run
  int64_t context = 1024;             // kernels: KV positions for attention
  std::vector<int64_t> batches = {1};  // kernels: decode batch sizes
  bool progress = true;               // one line per measurement on stderr
  std::string command;                // the command line, recorded
};

Json run_e2e(const BenchOptions& o);
Json run_module(const BenchOptions& o);
Json run_kernels(const BenchOptions& o);

// Where presets are synthesised unless --cache-dir says otherwise: $XDG_CACHE_HOME or
// ~/.cache, under agentcompile/models.
fs::path default_cache_dir();

}  // namespace ac::bench
