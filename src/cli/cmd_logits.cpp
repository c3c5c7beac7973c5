// agentcompile logits MODEL --tokens 1,2,3 [--backend B] --json: teacher-forced logits, one row per position.
#include <cstdio>
#include <optional>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {
struct LogitsOptions {
  std::string model, tokens, backend = "cpu", plan;
  bool json = false, rebuild_kernels = false;
};
}  // namespace

Subcommand add_logits(CLI::App& root) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* app = root.add_subcommand("logits", "Print the logits of every position of a token sequence (teacher forcing)");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  app->add_option("--tokens", o->tokens, "Comma-separated token ids")->required();
  app->add_option("--backend", o->backend, "cpu (default), cuda or auto");
  app->add_option("--plan", o->plan, "Run a compiled plan folder (its backend; refused when made for another model or machine)");
  app->add_flag("--rebuild-kernels", o->rebuild_kernels, "Ignore the plan's kernel binaries: compile its kernels from this build's templates (its choices are kept)");
  app->add_flag("--json", o->json, "Print {\"logits\": [[...], ...]} (the only output format)");
  return {app, [o]() {
            if (!o->json) throw_input("logits", "--json is required (the output is a JSON matrix)");
            std::vector<int32_t> tokens = parse_id_list(o->tokens, "--tokens");
            auto model = load_model(o->model);
            std::optional<Plan> plan;
            if (o->rebuild_kernels && o->plan.empty()) throw_input("--rebuild-kernels", "needs --plan");
            if (!o->plan.empty())
              plan = load_plan_for(o->plan, *model, o->backend == "cpu" ? "" : o->backend,
                                   o->rebuild_kernels ? PlanKernels::Rebuild : PlanKernels::Load);
            check_context(model->config, int64_t(tokens.size()), 0);
            for (int32_t t : tokens)
              if (t >= model->config.vocab_size)
                throw_input("--tokens", "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                            std::to_string(model->config.vocab_size) + ")");
            Graph g = build_decoder_graph(model->config, model->weights);
            ExecutorLimits lim{1, int64_t(tokens.size()), int64_t(tokens.size())};
            auto ex = plan ? make_plan_executor(*plan, g, lim) : make_executor(o->backend, g, lim);
            auto rows = teacher_forced_logits(*ex, tokens);
            // Shortest round-trip text per float ("%.9g" keeps every f32 bit).
            std::string out = "{\"logits\": [";
            char buf[32];
            for (size_t i = 0; i < rows.size(); ++i) {
              out += i ? ",\n[" : "\n[";
              for (size_t j = 0; j < rows[i].size(); ++j) {
                std::snprintf(buf, sizeof buf, j ? ",%.9g" : "%.9g", double(rows[i][j]));
                out += buf;
              }
              out += "]";
            }
            out += "]}\n";
            std::fwrite(out.data(), 1, out.size(), stdout);
            return 0;
          }};
}

}  // namespace ac::cli
