// What the CLI answers before any command runs: the command list (no command, `help`, a mistyped
// command, with the closest name as a suggestion) and the --version text.
#include <cstdio>
#include <string>
#include <vector>

#include "agentcompile/core/text.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/backend.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

std::vector<CLI::App*> commands_of(const CLI::App& app) {
  return const_cast<CLI::App&>(app).get_subcommands([](CLI::App*) { return true; });
}

// "agentcompile bench": the words that name `app` from the root.
std::string full_name(const CLI::App* app) {
  std::string s;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent())
    s = a->get_parent() == nullptr ? "agentcompile" + s : " " + a->get_name() + s;
  return s;
}

std::string command_list(const CLI::App& app) {
  const std::string name = full_name(&app);
  std::string s = "usage: " + name + " COMMAND [options]  (`" + name + " COMMAND --help` for a command's options)\n\n";
  s += app.get_parent() == nullptr ? "commands:\n" : "commands of " + name + ":\n";
  for (const CLI::App* c : commands_of(app)) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-12s ", c->get_name().c_str());
    // The list keeps each description to its first clause; `COMMAND --help` has the rest.
    std::string d = c->get_description();
    if (d.size() > 90)
      if (size_t cut = d.find(" ("); cut != std::string::npos) d.resize(cut);
    s += line + d + "\n";
  }
  if (app.get_parent() == nullptr) s += "\nalso: agentcompile help [COMMAND], agentcompile --version\n";
  return s;
}

CLI::App* find_command(const CLI::App& app, const std::string& name) {
  for (CLI::App* c : commands_of(app))
    if (c->get_name() == name) return c;
  return nullptr;
}

int unknown_command(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* c : commands_of(app)) names.push_back(c->get_name());
  const std::string near = closest_match(word, names);
  std::fprintf(stderr, "error: %s: unknown command \"%s\"%s\n\n%s", full_name(&app).c_str(), word.c_str(),
               near.empty() ? "" : ("; did you mean \"" + near + "\"?").c_str(), command_list(app).c_str());
  return 2;
}

}  // namespace

std::string version_text() {
  const Environment e = current_environment("cpu");
#ifdef AGENTCOMPILE_HAVE_CUDA
  const char* cuda = "CUDA backend built in";
#else
  const char* cuda = "CPU only (no CUDA backend in this build)";
#endif
  return "agentcompile " + e.engine_version + " (commit " + (e.engine_commit.empty() ? "unknown" : e.engine_commit) +
         ", " + cuda + ")";
}

std::optional<int> answer_without_command(const CLI::App& root, int argc, char** argv) {
  if (argc < 2) {
    std::fputs(command_list(root).c_str(), stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "help") {
    // help [COMMAND [SUBCOMMAND]]: the list, or that command's own help text.
    const CLI::App* at = &root;
    for (int i = 2; i < argc; ++i) {
      CLI::App* next = find_command(*at, argv[i]);
      if (next == nullptr) return unknown_command(*at, argv[i]);
      at = next;
    }
    std::fputs(at == &root ? command_list(root).c_str() : at->help().c_str(), stdout);
    return 0;
  }
  // Walk the command words; a word where a command is required and none matches is a typo.
  const CLI::App* at = &root;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string w = argv[i];
    if (w.empty() || w[0] == '-' || commands_of(*at).empty()) break;
    CLI::App* next = find_command(*at, w);
    if (next == nullptr) {
      if (at->get_require_subcommand_min() > 0) return unknown_command(*at, w);
      break;
    }
    at = next;
  }
  // "agentcompile bench" alone: one line naming its commands.
  if (at != &root && i == argc && !commands_of(*at).empty() && at->get_require_subcommand_min() > 0) {
    std::string names;
    const auto cs = commands_of(*at);
    for (size_t k = 0; k < cs.size(); ++k)
      names += (k == 0 ? "" : k + 1 == cs.size() ? " or " : ", ") + cs[k]->get_name();
    std::fprintf(stderr, "error: %s: needs a command: %s (see `agentcompile help %s`)\n", full_name(at).c_str(),
                 names.c_str(), at->get_name().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace ac::cli
