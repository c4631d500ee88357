// agent/main.cc: the `moat` command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <sstream>
#include <string>

#include "agent/cli.h"

namespace {

// CLI11 says "The following argument was not expected: --modle"; a word that looks like an
// option is named as an unknown option, so a typo reads as one.
std::string failure_text(const CLI::App* app, const CLI::Error& e) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr || colon == std::string::npos)
    return CLI::FailureMessage::simple(app, e);
  std::istringstream words(what.substr(colon + 2));
  std::string unknown;
  for (std::string w; words >> w;)
    if (w.size() > 1 && w[0] == '-') unknown += (unknown.empty() ? "" : ", ") + w;
  if (unknown.empty()) return CLI::FailureMessage::simple(app, e);
  return "unknown option " + unknown + " (--help lists the options)\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moat::agent;
  CLI::App app{"moat: a coding agent for code nobody trusts"};
  app.footer("Exit codes (each command's --help lists the ones it can return):\n" +
             exit_codes_text("  ", "  ", "\n"));
  app.require_subcommand(1);
  app.failure_message(failure_text);
  int exit_code = kExitDone;

  auto* version = app.add_subcommand("version", "Print moat's version");
  set_exit_codes(*version, {kExitDone, kExitUsage});
  version->callback([] { std::printf("moat %s\n", MOAT_VERSION); });
  app.set_version_flag("--version", std::string("moat ") + MOAT_VERSION);  // as `moat version`

  add_commands(app, exit_code, argc > 1 ? argv[1] : "");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : parse_error_exit_code(app);
  }
  return exit_code;
}
