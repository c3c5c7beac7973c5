#pragma once
// The on-disk cache of compiled kernels: one file per key, written to a temporary name and
// renamed into place (safe for concurrent processes), with a SHA-256 of its content checked on
// every load (a corrupt or truncated entry is rebuilt, never loaded).
// Folder: $AGENTCOMPILE_KERNEL_CACHE, else ~/.cache/agentcompile/kernels.
#include <optional>
#include <string>

#include "agentcompile/core/fs.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac::cuda {

fs::path kernel_cache_dir();

// nullopt when absent or corrupt (a corrupt entry is removed).
std::optional<JitResult> cache_load(const std::string& key);
// Best effort: a read-only cache folder only costs recompiles.
void cache_store(const JitResult& r);

}  // namespace ac::cuda
