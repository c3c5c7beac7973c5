// Environment fingerprints and model hashes: what plans and tuning records are bound to.
#include <algorithm>
#include <fstream>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/model/model.h"
#include "agentcompile/plan/plan.h"


namespace ac {


Json Environment::to_json() const {
  return {{"backend", backend}, {"device", device}, {"arch", arch}, {"sm_count", sm_count}, {"cores", cores},
          {"driver", driver}, {"cuda", cuda}, {"nvrtc", nvrtc}, {"engine_version", engine_version},
          {"engine_commit", engine_commit}, {"key", key()}};
}

Environment Environment::from_json(const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected an object");
  Environment e;
  e.backend = json_string(j, subject, "backend");
  if (e.backend != "cpu" && e.backend != "cuda") throw_input(subject + ": backend", json_quote(e.backend) + " is not cpu or cuda");
  e.device = json_string(j, subject, "device");
  e.arch = json_string(j, subject, "arch");
  e.sm_count = int(json_int(j, subject, "sm_count", 0, 1 << 20));
  e.cores = int(json_int(j, subject, "cores", 0, 1 << 20));
  e.driver = json_string(j, subject, "driver");
  e.cuda = json_string(j, subject, "cuda");
  e.nvrtc = json_string(j, subject, "nvrtc");
  e.engine_version = json_string(j, subject, "engine_version");
  e.engine_commit = json_opt_string(j, subject, "engine_commit").value_or("");
  return e;
}

std::string Environment::key() const {
  Sha256 h;
  h.part("agentcompile-env-1").part(backend).part(device).part(arch).part(std::to_string(sm_count));
  h.part(std::to_string(cores)).part(driver).part(cuda).part(nvrtc).part(engine_version);
  return h.hex().substr(0, 16);
}

std::string Environment::mismatch(const Environment& here) const {
  auto diff = [](const char* what, const std::string& a, const std::string& b) {
    return std::string(what) + " " + json_quote(a) + " (plan) vs " + json_quote(b) + " (here)";
  };
  if (backend != here.backend) return diff("backend", backend, here.backend);
  if (engine_version != here.engine_version) return diff("engine version", engine_version, here.engine_version);
  const char* dev = backend == "cuda" ? "GPU" : "host CPU";
  if (device != here.device) return diff(dev, device, here.device);
  if (arch != here.arch) return diff("arch", arch, here.arch);
  if (sm_count != here.sm_count) return diff("SM count", std::to_string(sm_count), std::to_string(here.sm_count));
  if (cores != here.cores) return diff("CPU threads", std::to_string(cores), std::to_string(here.cores));
  if (driver != here.driver) return diff("driver", driver, here.driver);
  if (cuda != here.cuda) return diff("CUDA", cuda, here.cuda);
  if (nvrtc != here.nvrtc) return diff("NVRTC", nvrtc, here.nvrtc);
  return "";
}

std::string model_hash(const Model& m) {
  constexpr uint64_t kPiece = 4096;
  constexpr int kSpread = 16;
  Sha256 h;
  h.part("agentcompile-model-1").part(read_file(m.dir / "config.json", 16 << 20));
  for (const auto& [name, t] : m.store.all()) {
    h.part(name).part(std::to_string(int(t->dtype))).part(t->shape_str());
    const uint64_t n = t->nbytes();
    const char* data = reinterpret_cast<const char*>(t->data);  // a lambda may not capture `t` before clang 16
    auto piece = [&](uint64_t at) {
      at = std::min(at, n > kPiece ? n - kPiece : 0);
      h.part(std::string_view(data + at, size_t(std::min(kPiece, n - at))));
    };
    if (n <= kPiece * (kSpread + 2)) {
      h.part(std::string_view(reinterpret_cast<const char*>(t->data), size_t(n)));
      continue;
    }
    piece(0);
    for (int i = 1; i <= kSpread; ++i) piece(n / (kSpread + 1) * uint64_t(i));
    piece(n - kPiece);
  }
  return h.hex();
}

}  // namespace ac
