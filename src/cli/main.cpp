// agentcompile: the command-line entry. Errors are one line on stderr, "error: <what>: <why>",
// exit code 2 for bad input and 1 for internal failures (docs/design.md, command-line contract).
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>

#include "agentcompile/core/error.h"
#include "cli/cli_common.h"

namespace {

constexpr ac::cli::AddCommand kCommands[] = {
    ac::cli::add_inspect,
    ac::cli::add_synth_model,
    ac::cli::add_logits,
    ac::cli::add_generate,
    ac::cli::add_chat,
    ac::cli::add_kernels,
    ac::cli::add_tokenize,
    ac::cli::add_detokenize,
    ac::cli::add_chat_template,
    ac::cli::add_advise,
    ac::cli::add_compile,
    ac::cli::add_bench,
    ac::cli::add_serve,
};

// CLI11 error text is multi-line in places; keep the first line.
std::string first_line(std::string s) {
  if (auto p = s.find('\n'); p != std::string::npos) s.resize(p);
  return s;
}

// A crash (a bug, never bad input) says so on stderr with the raw stack, then dies of the same
// signal: binary(+offset) frames that addr2line resolves against the unstripped build. Only
// async-signal-safe calls (write, backtrace_symbols_fd; backtrace is loaded before any crash).
void on_crash(int sig) {
  const char* head = "error: internal: crashed (";
  ::write(2, head, std::strlen(head));
  const char* name = sigabbrev_np(sig);
  if (name) ::write(2, name, std::strlen(name));
  ::write(2, "); stack:\n", 10);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_report() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_crash);
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_report();
  CLI::App app{"agentcompile: an LLM-guided CUDA inference compiler and runtime for HF decoder LLMs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ac::cli::version_text());
  std::vector<ac::cli::Subcommand> subs;
  for (auto add : kCommands) subs.push_back(add(app));
  // No command, `help [COMMAND]`, or a command that does not exist: answered before CLI11 parses.
  if (auto rc = ac::cli::answer_without_command(app, argc, argv)) return *rc;

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", first_line(e.what()).c_str());
    return 2;
  }

  try {
    for (auto& s : subs)
      if (s.app->parsed()) {
        int rc = s.run();
        std::fflush(stdout);
        return rc;
      }
    std::fprintf(stderr, "error: no subcommand given (see --help)\n");
    return 2;
  } catch (const ac::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", first_line(e.what()).c_str());
    return static_cast<int>(e.kind());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal: %s\n", first_line(e.what()).c_str());
    return 1;
  }
}
