#pragma once
// Shared pieces of the subcommands: each src/cli/cmd_<name>.cpp adds one subcommand to the root
// app and returns how to run it. main.cpp maps errors to the exit codes of docs/design.md.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agentcompile/core/json.h"

namespace ac {
struct Model;
}

namespace ac::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code; throws ac::Error on failure
};

using AddCommand = Subcommand (*)(CLI::App& root);

// Every numeric flag carries one: the text must be a finite number in [lo, hi], checked before
// CLI11 converts it, so "-1" for a count or a seed is an error rather than 2^64-1, and NaN or a
// huge budget never reaches the code.
CLI::Validator in_range(long double lo, long double hi);

// "1, 2,3" -> {1, 2, 3}; BadInput naming `flag` on anything else.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag);

// cli_help.cpp: "agentcompile 0.1.0 (commit ..., CUDA backend built in)"; and the answer to no
// command, `help [COMMAND]` or a mistyped command (the command list, a "did you mean"), given
// before CLI11 parses; nullopt when the command line names a real command.
std::string version_text();
std::optional<int> answer_without_command(const CLI::App& root, int argc, char** argv);

// --advisor, --llm-url and --llm-model (advise, compile), their help naming the environment
// variables they fall back on and where the API key comes from.
struct AdvisorFlags {
  std::string advisor = "heuristic", llm_url, llm_model;
};
void add_advisor_flags(CLI::App* app, AdvisorFlags& flags);

// "1,2,3" (sep ",") or "1, 2, 3" (sep ", ").
std::string join_ids(const std::vector<int32_t>& ids, const std::string& sep = ",");

// The text of file `path`, or of standard input for "-" (regular files, pipes, terminals); a text
// longer than max_bytes is BadInput naming the file and `limit_note` (why that limit).
std::string read_text_input(const std::string& path, size_t max_bytes, const std::string& limit_note);

// One per subcommand file.
Subcommand add_inspect(CLI::App& root);
Subcommand add_synth_model(CLI::App& root);
Subcommand add_logits(CLI::App& root);
Subcommand add_generate(CLI::App& root);
Subcommand add_kernels(CLI::App& root);
Subcommand add_tokenize(CLI::App& root);
Subcommand add_detokenize(CLI::App& root);
Subcommand add_chat_template(CLI::App& root);
Subcommand add_chat(CLI::App& root);
Subcommand add_advise(CLI::App& root);
Subcommand add_compile(CLI::App& root);
Subcommand add_bench(CLI::App& root);
Subcommand add_serve(CLI::App& root);

// The regions of a model with their summaries (cmd_advise.cpp), for inspect --regions.
Json regions_report(const Model& m);
void print_regions(const Json& report);

}  // namespace ac::cli
