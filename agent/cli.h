// agent/cli.h: the `moat` command line: one registration function per command group.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace moat::agent {

// Exit codes of `moat`; kExitCodeMeanings says what each means.
enum ExitCode : int {
  kExitDone = 0,
  kExitTaskFailed = 1,
  kExitUsage = 2,
  kExitSandbox = 3,
  kExitProvider = 4,
  kExitStore = 5,
};

// The one text per exit code: `moat --help`, `moat run --help` and the README's table
// (tests/unit/agent/cli_test.cc) all say these words.
struct ExitCodeMeaning {
  ExitCode code;
  const char* meaning;
};
inline constexpr ExitCodeMeaning kExitCodeMeanings[] = {
    {kExitDone, "done"},
    {kExitTaskFailed, "the task failed or a gate stopped it"},
    {kExitUsage, "usage or configuration error"},
    {kExitSandbox, "the sandbox could not be set up"},
    {kExitProvider, "the model provider failed"},
    {kExitStore, "the session could not be saved (the session store failed)"},
};

// "<before><code><between><meaning><after>" for every code, in order.
inline std::string exit_codes_text(const char* before, const char* between, const char* after) {
  std::string out;
  for (const ExitCodeMeaning& e : kExitCodeMeanings)
    out += before + std::to_string(e.code) + between + e.meaning + after;
  return out;
}

// A command's --help footer: "Exit codes: 0 done, 2 usage or configuration error." with only
// the codes that command can return (a parse error is always 2, --help always 0).
inline std::string exit_codes_footer(std::initializer_list<ExitCode> codes) {
  std::string out;
  for (const ExitCodeMeaning& e : kExitCodeMeanings)
    for (ExitCode c : codes)
      if (c == e.code) out += (out.empty() ? "" : ", ") + std::to_string(c) + " " + e.meaning;
  return "Exit codes: " + out + ".";
}
inline void set_exit_codes(CLI::App& cmd, std::initializer_list<ExitCode> codes) {
  cmd.footer(exit_codes_footer(codes));
}
// A group's own codes: it only ever refuses a command line (a subcommand's --help has its).
inline void set_group_exit_codes(CLI::App& group) {
  set_exit_codes(group, {kExitDone, kExitUsage});
}

// The policy directories, one spelling in every command (moatd's too): --system-policy-dir
// and --user-policy-dir. The spellings `moat policy` had (--policy-dir, --system-dir,
// --user-dir) stay as hidden aliases, so scripts written for them keep working.
inline void add_policy_dir_options(CLI::App& cmd, std::string& system_dir, std::string& user_dir,
                                   const std::string& system_help, const std::string& user_help) {
  cmd.add_option("--system-policy-dir", system_dir, system_help);
  cmd.add_option("--policy-dir,--system-dir", system_dir)->group("");
  cmd.add_option("--user-policy-dir", user_dir, user_help);
  cmd.add_option("--user-dir", user_dir)->group("");
}

// The check of a count or an amount: 0 up to what T holds, said in those words when a value is
// not (CLI::NonNegativeNumber's message spelled the largest double out, 309 digits).
template <typename T>
CLI::Validator non_negative() {
  const std::string range =
      std::is_integral_v<T>
          ? "a whole number from 0 to " + std::to_string(std::numeric_limits<T>::max())
          : std::string("a number, 0 or more");
  auto check = [range](std::string& in) -> std::string {
    T v{};
    const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
    if (ec != std::errc() || end != in.data() + in.size() || v < T{})
      return in + " is not " + range;
    return {};
  };
  return CLI::Validator(check, "NONNEGATIVE");
}

// Each add_* registers its subcommands on `app`. A subcommand's callback stores its exit
// code in `exit_code` (CLI11 callbacks return void).
void add_run_command(CLI::App& app, int& exit_code);       // run
void add_sandbox_commands(CLI::App& app, int& exit_code);  // sandbox exec|explain-filter, doctor
// The exit status of a command line CLI11 refused: 125 for `sandbox exec` (as env(1) and
// timeout(1) fail), kExitUsage for the others.
int parse_error_exit_code(const CLI::App& app);
void add_policy_commands(CLI::App& app, int& exit_code);    // policy lint|test|list|explain
void add_sessions_commands(CLI::App& app, int& exit_code);  // sessions ..., audit ...
void add_provider_commands(CLI::App& app, int& exit_code);  // provider parse, prompt show
void add_batch_command(CLI::App& app, int& exit_code);      // batch, batch merge
void add_mcp_commands(CLI::App& app, int& exit_code);       // mcp list|test
// completion bash|zsh: registered last, as its script lists every command registered before.
void add_completion_command(CLI::App& app, int& exit_code);
// The command groups a command line whose first word is `first_word` needs: that word's group
// alone (`moat sandbox exec` builds no other command's options: a third of moat's start), or
// every group and completion when the word names none of them (--help, completion, a typo).
void add_commands(CLI::App& app, int& exit_code, std::string_view first_word);

}  // namespace moat::agent
