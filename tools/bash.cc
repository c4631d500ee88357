// tools/bash.cc: `bash`: one `bash -c` per call in a fresh sandbox worker.
#include "tools/bash.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "base/random.h"
#include "tools/bash_output.h"
#include "tools/schema.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Why the command did not succeed, or "" when it did.
std::string failure_reason(const ExecStatus& st, const BashOutput& out, double timeout_s) {
  if (out.ceiling_hit())
    return "killed: the output passed the " + format_size(out.total_bytes()) + " output ceiling" +
           (out.spill_error().empty() ? "; everything up to it is in " + out.spill_path() : "");
  if (st.cancelled) return "cancelled";
  if (st.timed_out) return "timed out after " + format_seconds(timeout_s) + " s";
  if (!st.limit.empty()) return "killed: the sandbox's " + st.limit + " limit was reached";
  if (st.signal != 0) return "killed by signal " + std::to_string(st.signal);
  if (st.exit_code != 0) return "exit code " + std::to_string(st.exit_code);
  return "";
}

// What a call without a timeout gets, and what the policy caps a requested one to.
std::string timeout_text(const ToolLimits& limits) {
  std::string t = "Optionally give a timeout in seconds";
  if (limits.default_timeout_s > 0)
    t += " (default " + format_seconds(limits.default_timeout_s) + " s" +
         (limits.max_timeout_s > 0
              ? ", at most the policy's " + format_seconds(limits.max_timeout_s) + " s"
              : std::string()) +
         ")";
  return t + ".";
}

ToolSpec bash_spec(const ToolLimits& limits) {
  ToolSpec s;
  s.description =
      "Execute a bash command in the workspace, inside the sandbox (stdin is /dev/null, stdout "
      "and stderr are interleaved). Returns the last " +
      std::to_string(kMaxLines) + " lines or " + format_size(kMaxBytes) +
      " of output (whichever is hit first); when output is truncated, the full output is saved "
      "to a file under /tmp that you can read with the read tool. A non-zero exit code, a "
      "timeout or a cancel is an error. " +
      timeout_text(limits) + " A command whose output passes " +
      format_size(limits.output_ceiling) + " is killed.";
  s.parameters = object_schema(
      {{"command", property("string", "Bash command to execute")},
       {"timeout", property("number", "Timeout in seconds", {{"exclusiveMinimum", 0}})}},
      {"command"});
  s.sequential = false;
  return s;
}

ToolResult run_bash(const nlohmann::json& args, CallContext& ctx) {
  const std::string command = args.at("command").get<std::string>();
  const double requested_s =
      args.contains("timeout") ? args["timeout"].get<double>() : ctx.limits.default_timeout_s;
  const bool capped = ctx.limits.max_timeout_s > 0 && requested_s > ctx.limits.max_timeout_s;
  const double timeout_s = capped ? ctx.limits.max_timeout_s : requested_s;
  std::atomic<bool> kill{false};
  BashOutput::Options options;
  options.ceiling = ctx.limits.output_ceiling;
  options.progress = ctx.progress;
  options.open_spill = [&ctx](std::string* path) {
    *path = "/tmp/moat-bash-" + random_hex_or_abort(8) + ".log";
    return ctx.runner->create_file(*path);
  };
  BashOutput out(std::move(options), &kill);  // sets `kill` when the output ceiling is hit
  auto status = ctx.runner->exec(
      {"bash", "--noprofile", "--norc", "-c", command}, ctx.workspace, timeout_s,
      [&out](std::string_view c) { out.add(c); }, StopFlags(&kill, ctx.cancel, ctx.cancel_wake));
  out.finish();
  if (!status) return ToolResult::error("could not run bash: " + status.error().message());
  const std::string reason = failure_reason(*status, out, timeout_s);
  std::string text = out.render();
  std::string notes = reason;
  if (capped)
    notes += std::string(notes.empty() ? "" : "\n") + "the requested timeout of " +
             format_seconds(requested_s) + " s was capped to the policy's wall time of " +
             format_seconds(timeout_s) + " s";
  if (!notes.empty()) {
    if (!text.empty() && text.back() == '\n') text.pop_back();
    text += "\n\n" + notes;
  }
  ToolResult r = ToolResult::text(std::move(text), !reason.empty());
  r.details = {{"exitCode", status->exit_code},
               {"signal", status->signal},
               {"timedOut", status->timed_out},
               {"timeoutS", timeout_s},
               {"timeoutCapped", capped},
               {"outputBytes", out.total_bytes()},
               {"durationMs", status->duration.count()}};
  if (!out.spill_path().empty() && out.spill_error().empty())
    r.details["fullOutputPath"] = out.spill_path();
  return r;
}

std::optional<std::string> command_line(const nlohmann::json& args) {
  if (!args.is_object() || !args.contains("command") || !args["command"].is_string())
    return std::nullopt;
  return args["command"].get<std::string>();
}

std::vector<Guideline> bash_guidance(const GrantedTools& granted) {
  std::vector<Guideline> g;
  if (!granted.any_explores())
    g.push_back({GuidelineSlot::kExplore, "Explore with bash (rg, find, ls); keep outputs short."});
  g.push_back({GuidelineSlot::kTest,
               "Run the project's tests with bash after a change; the sandbox has no network "
               "unless the policy allows it."});
  return g;
}

}  // namespace

const Tool kBashTool = {.name = "bash",
                        .spec = &bash_spec,
                        .run = &run_bash,
                        .command = &command_line,
                        .changes_files = true,
                        .guidance = &bash_guidance};

}  // namespace moat::tools
