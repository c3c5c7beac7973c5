#include "agentcompile/bench/workloads.h"

#include <charconv>

#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/model/architecture.h"

namespace ac::bench {

const std::vector<Workload>& standard_workloads() {
  static const std::vector<Workload> w = {
      {"W1", 32, 256, 1}, {"W2", 128, 128, 1}, {"W3", 2048, 128, 1}, {"W4", 128, 1024, 1}, {"W5", 128, 128, 8}};
  return w;
}

namespace {

bool parse_int(std::string_view s, int64_t lo, int64_t hi, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && out >= lo && out <= hi;
}

}  // namespace

std::vector<Workload> parse_workloads(const std::string& spec, const std::string& flag) {
  std::vector<Workload> out;
  size_t i = 0;
  while (i <= spec.size()) {
    size_t j = spec.find(',', i);
    if (j == std::string::npos) j = spec.size();
    const std::string item = spec.substr(i, j - i);
    i = j + 1;
    bool found = false;
    for (const Workload& w : standard_workloads())
      if (w.name == item) {
        out.push_back(w);
        found = true;
      }
    if (found) continue;
    // P/G or P/GxB
    const size_t slash = item.find('/'), x = item.find('x');
    Workload w;
    const bool ok = slash != std::string::npos && parse_int(std::string_view(item).substr(0, slash), 1, 1 << 20, w.prompt) &&
                    parse_int(std::string_view(item).substr(slash + 1, x == std::string::npos ? std::string::npos : x - slash - 1),
                              1, 1 << 20, w.gen) &&
                    (x == std::string::npos || parse_int(std::string_view(item).substr(x + 1), 1, 64, w.batch));
    if (!ok)
      throw_input(flag, "\"" + item + "\" is not a workload (W1..W5, or P/G or P/GxB with prompt and generated tokens "
                                      "and a batch of 1-64)");
    w.name = item;
    out.push_back(w);
  }
  return out;
}

std::vector<int32_t> synthetic_prompt(int64_t n, int row, int64_t vocab) {
  if (vocab <= 3) throw_input("prompt", "the vocabulary is too small for a synthetic prompt");
  uint64_t state = 0x5eed0000ull + uint64_t(row);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = int32_t(3 + splitmix64(state) % uint64_t(vocab - 3));
  return ids;
}

double decode_kv_bytes(const ModelConfig& c, const Workload& w) {
  return double(w.batch) * double(c.num_layers) * 2.0 * double(c.kv_dim()) * 2.0 * (double(w.prompt) + double(w.gen) / 2.0);
}

double prefill_flops(const ModelConfig& c, const Workload& w) {
  double per_token = 0;  // weights a token multiplies with, in the layers
  const double picked = c.is_moe() ? double(c.moe.experts_per_token) / double(c.moe.experts) : 1.0;
  for (const ExpectedTensor& t : expected_tensors(c)) {
    if (t.shape.size() != 2 || t.name.rfind("model.layers.", 0) != 0) continue;  // norms, embedding, lm_head
    const double n = double(t.shape[0]) * double(t.shape[1]);
    per_token += t.name.find(".experts.") != std::string::npos ? n * picked : n;
  }
  const double p = double(w.prompt);
  double pairs = p * (p + 1) / 2;  // token i attends positions 0..i
  if (c.attention_window > 0 && c.attention_window < w.prompt) {
    const double win = double(c.attention_window);
    pairs = win * (win + 1) / 2 + (p - win) * win;
  }
  const double attention = 4.0 * pairs * double(c.q_dim()) * double(c.num_layers);
  const double logits = 2.0 * double(c.hidden_size) * double(c.vocab_size);
  return double(w.batch) * (2.0 * p * per_token + attention + logits);
}

}  // namespace ac::bench
