// agentcompile tokenize MODEL (--text S | --file F | --json-array F) [--json] [--no-special] [--add-special-tokens]
#include <cstdio>

#include "agentcompile/core/error.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

constexpr size_t kMaxInputBytes = size_t(1) << 30;

struct TokenizeOptions {
  std::string model, text, file, json_array;
  bool json = false;
  bool no_special = false;
  bool add_special = false;
};

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace

Subcommand add_tokenize(CLI::App& root) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* app = root.add_subcommand(
      "tokenize",
      "Token ids of text, with the model's tokenizer.json (no BOS/EOS added unless --add-special-tokens; "
      "special-token text such as <|im_start|> becomes its token). Invalid UTF-8 is replaced by U+FFFD, as the "
      "reference tokenizer does");
  app->add_option("MODEL", o->model, "Folder with tokenizer.json (and optionally tokenizer_config.json)")->required();
  app->add_option("--text", o->text, "The text");
  app->add_option("--file", o->file, "A file holding the text");
  app->add_option("--json-array", o->json_array,
                  "A JSON file holding an array of strings; prints a JSON array with the ids of each");
  app->add_flag("--json", o->json, "Print a JSON array of ids instead of comma-separated ids");
  app->add_flag("--no-special", o->no_special, "Encode special-token text as ordinary text");
  app->add_flag("--add-special-tokens", o->add_special,
                "Add what the tokenizer.json post_processor adds around a text, as Hugging Face's "
                "add_special_tokens=True and generate --prompt do (a BOS for Llama 3, nothing for Qwen3)");
  return {app, [o, app]() {
            const int sources = int(app->count("--text") > 0) + int(app->count("--file") > 0) +
                                int(app->count("--json-array") > 0);
            if (sources != 1) throw_input("tokenize", "give exactly one of --text, --file, --json-array");
            const Tokenizer tok = Tokenizer::load(o->model);
            const bool allow_special = !o->no_special;
            auto encode = [&](const std::string& text) {
              std::vector<int32_t> ids = tok.encode(text, allow_special);
              return o->add_special ? tok.add_special_tokens(ids) : ids;
            };
            if (app->count("--json-array")) {
              const Json list = parse_json_strict(read_file(o->json_array, kMaxInputBytes), o->json_array);
              if (!list.is_array()) throw_input(o->json_array, "expected a JSON array of strings");
              for (size_t k = 0; k < list.size(); ++k)
                if (!list[k].is_string()) throw_input(o->json_array, "[" + std::to_string(k) + "]: expected a string");
              Json out = Json::array();
              for (const Json& s : list) out.push_back(encode(s.get_ref<const std::string&>()));
              print(out.dump());
              return 0;
            }
            const std::string text = app->count("--file") ? read_file(o->file, kMaxInputBytes) : o->text;
            const std::vector<int32_t> ids = encode(text);
            print(o->json ? Json(ids).dump() : join_ids(ids));
            return 0;
          }};
}

}  // namespace ac::cli
