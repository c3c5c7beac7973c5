// agentcompile detokenize MODEL --ids 1,2,3 [--skip-special] [--json]
#include <cstdio>

#include "agentcompile/core/json.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct DetokenizeOptions {
  std::string model, ids;
  bool skip_special = false;
  bool json = false;
};

}  // namespace

Subcommand add_detokenize(CLI::App& root) {
  auto o = std::make_shared<DetokenizeOptions>();
  CLI::App* app = root.add_subcommand(
      "detokenize",
      "Text of token ids, with the model's tokenizer.json. Ids the tokenizer has no token for (such as the padding "
      "ids of a model's vocabulary) add no text, as in Hugging Face; they are named on stderr (or in --json)");
  app->add_option("MODEL", o->model, "Folder with tokenizer.json (and optionally tokenizer_config.json)")->required();
  app->add_option("--ids", o->ids, "Comma-separated token ids, e.g. 9707,1879")->required();
  app->add_flag("--skip-special", o->skip_special, "Leave special tokens out of the text");
  app->add_flag("--json", o->json,
                "Print {\"text\": ..., \"ids_without_text\": [...]} (exact, for text ending in whitespace)");
  return {app, [o]() {
            const std::vector<int32_t> ids = parse_id_list(o->ids, "--ids");
            const Tokenizer tok = Tokenizer::load(o->model);
            const std::string text = tok.decode(ids, o->skip_special);
            const std::vector<int32_t> no_text = tok.ids_without_text(ids);
            const std::string out = o->json ? Json{{"text", text}, {"ids_without_text", no_text}}.dump() : text;
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fputc('\n', stdout);
            if (!o->json && !no_text.empty()) {
              std::fprintf(stderr, "warning: token ids without text in this tokenizer (they add nothing): %s\n",
                           join_ids(no_text, ", ").c_str());
            }
            return 0;
          }};
}

}  // namespace ac::cli
