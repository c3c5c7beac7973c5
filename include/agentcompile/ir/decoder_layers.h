#pragma once
// The decoder graph's structure recovered from its op list: which op is which within each
// layer. Backends that fuse ops across a layer (the CUDA fast path) and the compiler's region
// partitioning read it instead of re-deriving the pattern. Throws Internal for a graph that is
// not the builder's decoder.
#include <vector>

#include "agentcompile/ir/graph.h"

namespace ac {

struct LayerOps {
  const Op* input_norm = nullptr;
  const Op* q = nullptr;
  const Op* k = nullptr;
  const Op* v = nullptr;
  const Op* q_norm = nullptr;  // qwen3 only
  const Op* k_norm = nullptr;
  const Op* rope_q = nullptr;
  const Op* rope_k = nullptr;
  const Op* attention = nullptr;
  const Op* o = nullptr;
  const Op* attn_add = nullptr;
  const Op* post_norm = nullptr;
  const Op* gate = nullptr;  // dense layer: gate, up, swiglu, down
  const Op* up = nullptr;
  const Op* swiglu = nullptr;
  const Op* down = nullptr;
  const Op* moe = nullptr;   // sparse layer (qwen3_moe, mixtral): the MoeMlp op instead
  const Op* mlp_add = nullptr;
};

struct DecoderOps {
  const Op* embed = nullptr;
  std::vector<LayerOps> layers;
  const Op* final_norm = nullptr;
  const Op* logits = nullptr;
};

DecoderOps match_decoder_ops(const Graph& g);

}  // namespace ac
