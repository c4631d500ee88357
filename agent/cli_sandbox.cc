// agent/cli_sandbox.cc: `moat sandbox exec` (one command through moatd, the session init and
// a worker, exactly as a tool call runs), `moat sandbox explain-filter` and `moat doctor`.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/cli.h"
#include "agent/run_support.h"
#include "base/byte_strings.h"
#include "base/workspace_path.h"
#include "sandbox/doctor.h"
#include "sandbox/seccomp_policy.h"
#include "tools/registry.h"

namespace moat::agent {
namespace {

using nlohmann::json;

struct ExecOptions {
  std::vector<std::string> argv;
  std::string workspace;
  double timeout_s = 0;
  std::string connect;
  MoatdPassThrough moatd;
};

// Quotes each word for bash so the command runs with exactly these argv words.
std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    out += '\'';
    for (char c : w) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

int run_exec(const ExecOptions& o) {
  if (o.argv.empty()) {
    std::fprintf(stderr,
                 "moat sandbox exec: no command given (usage: moat sandbox exec -- CMD ARGS...)\n");
    return kExitUsage;
  }
  MOAT_ASSIGN_OR_RETURN_CODE(std::string workspace, canonical_workspace(o.workspace), kExitUsage);
  MOAT_ASSIGN_OR_RETURN_CODE(std::unique_ptr<MoatdClient> client, start_moatd(o.connect, o.moatd),
                             kExitSandbox);
  WelcomeError why;
  auto welcome = client->hello(workspace, /*headless=*/true, &why);
  if (!welcome) {
    std::fprintf(stderr, "moat: %s\n", welcome.error().message().c_str());
    return why.code == "sandbox" || why.code == "io" ? kExitSandbox : kExitUsage;
  }
  const tools::CommandCall call = tools::command_call(shell_join(o.argv), o.timeout_s);
  bool streamed = false;
  auto result = client->call(
      "exec-1", call.tool, call.arguments,
      [&streamed](std::string_view chunk) {
        streamed = true;
        std::fwrite(chunk.data(), 1, chunk.size(), stdout);
        std::fflush(stdout);
      },
      nullptr);
  client->bye();
  const json& d = result.details;
  const bool ran = d.is_object() && (d.contains("exitCode") || d.contains("signal"));
  if (!streamed || !ran) {
    for (const auto& b : result.content)
      if (b.value("type", "") == "text")
        std::fprintf(result.is_error ? stderr : stdout, "%s\n", b.value("text", "").c_str());
  }
  if (!ran) return result.is_error ? kExitTaskFailed : kExitDone;
  if (d.contains("signal") && d["signal"].is_number_integer() && d["signal"].get<int>() > 0)
    return 128 + d["signal"].get<int>();
  return d.contains("exitCode") && d["exitCode"].is_number_integer() ? d["exitCode"].get<int>()
                                                                     : kExitTaskFailed;
}

void add_exec_command(CLI::App& sandbox, int& exit_code) {
  auto eo = std::make_shared<ExecOptions>();
  auto* exec = sandbox.add_subcommand(
      "exec", "Run one command in a fresh session sandbox, through moatd, as a tool call runs");
  exec->footer(
      "Exits with the command's status (128+N when killed by signal N); 1 when the "
      "policy refused it, 2 on usage errors, 3 when the sandbox could not be set up.");
  exec->add_option("--workspace,-C", eo->workspace, "Workspace bound read-write (default: .)");
  exec->add_option("--timeout", eo->timeout_s, "Wall-clock timeout in seconds");
  exec->add_option("--connect", eo->connect, "Use a running moatd at this socket path");
  add_moatd_pass_through(*exec, eo->moatd);
  exec->add_option("command", eo->argv, "The command and its arguments (after --)")->required();
  exec->callback([eo, &exit_code] { exit_code = run_exec(*eo); });
}

void add_explain_filter_command(CLI::App& sandbox) {
  auto network = std::make_shared<bool>(false);
  auto* explain = sandbox.add_subcommand(
      "explain-filter", "Print the workers' seccomp filter: every set, entry, action and reason");
  explain->add_flag("--network", *network, "The filter of a session the policy grants network");
  explain->callback([network] { std::fputs(sandbox::explain_filter(*network).c_str(), stdout); });
}

// Prints the doctor's report; false when a layer every session needs is missing.
bool print_doctor_report(bool as_json) {
  const json report = sandbox::doctor_report();
  if (as_json) {
    std::printf("%s\n", dump_lossless(report, 2).c_str());  // a reason may name any path
  } else {
    for (const auto& [layer, v] : report.items()) {
      if (!v.is_object()) {
        std::printf("%-18s %s\n", layer.c_str(), v.dump().c_str());
        continue;
      }
      const bool ok = v.value("ok", false);
      std::string extra = v.contains("abi") ? " (ABI " + v["abi"].dump() + ")" : "";
      std::printf("%-18s %-4s %s%s\n", layer.c_str(), ok ? "yes" : "NO",
                  v.value("reason", "").c_str(), extra.c_str());
    }
  }
  bool complete = true;
  for (const char* needed : {"mount_ns", "pid_ns", "net_ns", "seccomp"})
    if (report.contains(needed) && !report[needed].value("ok", false)) complete = false;
  return complete;
}

}  // namespace

void add_sandbox_commands(CLI::App& app, int& exit_code) {
  auto* sandbox = app.add_subcommand("sandbox", "Run commands in the sandbox and inspect it");
  sandbox->require_subcommand(1);
  add_exec_command(*sandbox, exit_code);
  add_explain_filter_command(*sandbox);

  auto as_json = std::make_shared<bool>(false);
  auto* doctor =
      app.add_subcommand("doctor", "Report which isolation layers this machine supports");
  doctor->add_flag("--json", *as_json, "Print the report as JSON");
  // Exit 3 when a layer every session needs is missing, so scripts can check the machine.
  doctor->callback([as_json, &exit_code] {
    if (!print_doctor_report(*as_json)) exit_code = kExitSandbox;
  });
}

}  // namespace moat::agent
