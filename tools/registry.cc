// tools/registry.cc: the tool set, execute() (repair -> validate -> resolve -> authorize ->
// run) and the worker-side dispatch of handle_in_sandbox().
#include "tools/registry.h"

#include <unistd.h>

#include <exception>

#include "base/byte_strings.h"
#include "base/log.h"
#include "tools/bash.h"
#include "tools/edit.h"
#include "tools/find.h"
#include "tools/grep.h"
#include "tools/ls.h"
#include "tools/read.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/write.h"

namespace moat::tools {
namespace {

using SandboxOp = ToolResult (*)(const std::string& canonical, const nlohmann::json& args);

// A tool whose work is a file operation inside the sandbox.
struct FileTool {
  const char* name;
  PathAccess access;
  const char* default_path;  // when `path` is optional; nullptr when it is required
  bool must_exist;           // false: the operation creates it (write)
  SandboxOp op;
  // Programs that replace the built-in back end when the sandbox has one of them.
  std::vector<std::string> external;
};

const std::vector<FileTool> kFileTools = {
    {"read", PathAccess::kRead, nullptr, true, &read_in_sandbox, {}},
    {"edit", PathAccess::kWrite, nullptr, true, &edit_in_sandbox, {}},
    {"write", PathAccess::kWrite, nullptr, false, &write_in_sandbox, {}},
    {"grep", PathAccess::kRead, ".", true, &grep_in_sandbox, {"rg"}},
    {"find", PathAccess::kRead, ".", true, &find_in_sandbox, {"fdfind", "fd"}},
    {"ls", PathAccess::kRead, ".", true, &ls_in_sandbox, {}},
};

const FileTool* find_file_tool(std::string_view name) {
  for (const auto& t : kFileTools)
    if (name == t.name) return &t;
  return nullptr;
}

// Both ways, every byte crosses as it is: a canonical path that is not UTF-8 (a link the
// sandbox planted into such a directory) is judged by moatd and then acted on by the worker,
// so a U+FFFD in its place would make the path judged differ from the path used.
std::string dump(const nlohmann::json& j) { return dump_lossless(j); }

// One round trip to a worker running handle_in_sandbox().
Result<nlohmann::json> call_worker(CallContext& ctx, const nlohmann::json& request) {
  MOAT_ASSIGN_OR_RETURN(std::string response, ctx.runner->run_handler(dump(request)));
  auto j = nlohmann::json::parse(response, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(std::string("the sandbox worker returned malformed JSON"));
  return decode_byte_strings(std::move(j));
}

std::string tool_names() {
  std::string out;
  for (const auto& t : all_tools()) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

// Where a file tool's path leads inside the sandbox.
struct Target {
  std::string canonical;
  bool is_dir = false;
  std::string program;  // rg / fdfind inside the sandbox, when asked for and present
};

Result<Target> resolve_target(const FileTool& tool, const std::string& path, CallContext& ctx) {
  const nlohmann::json which =
      ctx.use_external_search ? nlohmann::json(tool.external) : nlohmann::json::array();
  MOAT_ASSIGN_OR_RETURN(nlohmann::json r, call_worker(ctx, {{"op", "resolve"}, {"path", path},
                                                            {"cwd", ctx.workspace}, {"which", which}}));
  if (r.contains("error")) return fail("could not resolve " + path + ": " + r["error"].get<std::string>());
  Target t{r["path"].get<std::string>(), r["isDir"].get<bool>(), r.value("program", "")};
  if (tool.must_exist && !r["exists"].get<bool>())
    return fail("path not found: " + path + " (resolved to " + t.canonical + ")");
  return t;
}

// The operation itself, in a worker; find first lists with fdfind when the sandbox has it.
ToolResult run_operation(const FileTool& tool, const Target& target, const nlohmann::json& args,
                         CallContext& ctx) {
  nlohmann::json op_args = args;
  if (!target.program.empty() && std::string_view(tool.name) == "grep")
    return grep_with_rg(target.program, target.canonical, target.is_dir, args, ctx);
  if (!target.program.empty() && std::string_view(tool.name) == "find") {
    if (!target.is_dir) return ToolResult::error(target.canonical + " is not a directory");
    auto listed = list_with_fd(target.program, target.canonical, ctx);
    if (!listed) return ToolResult::error("find failed: " + listed.error().message());
    op_args["_listed"] = std::move(*listed);
  }
  auto response = call_worker(ctx, {{"op", tool.name}, {"path", target.canonical}, {"args", op_args}});
  if (!response) return ToolResult::error(std::string(tool.name) + " failed in the sandbox: " + response.error().message());
  if (response->contains("error"))
    return ToolResult::error(std::string(tool.name) + " failed in the sandbox: " + (*response)["error"].get<std::string>());
  return ToolResult::from_json(*response);
}

// resolve -> authorize (moatd checks the policy and audits) -> queue (mutations) -> run.
ToolResult run_file_tool(const FileTool& tool, const ToolSpec& spec, const nlohmann::json& args,
                         CallContext& ctx) {
  MutationQueue& queue = ctx.mutations ? *ctx.mutations : MutationQueue::process_default();
  if (spec.mutates && !ctx.mutation_ticket)
    ctx.mutation_ticket = std::make_shared<MutationQueue::Ticket>(queue.enter());
  // Every way out of this function leaves the queue, or later calls would wait forever.
  // The ticket is dropped too, so a context reused for another call takes a fresh one.
  struct LeaveQueue {
    CallContext& ctx;
    ~LeaveQueue() {
      if (ctx.mutation_ticket) ctx.mutation_ticket->release();
      ctx.mutation_ticket.reset();
    }
  } leave{ctx};
  const std::string path = args.contains("path") ? args["path"].get<std::string>() : tool.default_path;
  auto target = resolve_target(tool, path, ctx);
  if (!target) return ToolResult::error(target.error().message());
  // Named before the policy is asked: a call waiting for a person's answer holds back only
  // later calls on its own path.
  if (spec.mutates) queue.name(*ctx.mutation_ticket, target->canonical);
  if (ctx.authorize) {
    if (auto refusal = ctx.authorize(target->canonical, tool.access))
      return ToolResult::error("refused by policy: " + *refusal);
  }
  if (spec.mutates) queue.acquire(*ctx.mutation_ticket, target->canonical);
  return run_operation(tool, *target, args, ctx);
}

ToolResult execute_validated(const ToolSpec& spec, const nlohmann::json& args, CallContext& ctx) {
  if (ctx.runner == nullptr) return ToolResult::error("no sandbox to run " + spec.name + " in");
  if (spec.name == "bash") return run_bash(args, ctx);
  if (const FileTool* ft = find_file_tool(spec.name)) return run_file_tool(*ft, spec, args, ctx);
  return ToolResult::error("internal error: no handler for tool " + spec.name);
}

// The first of `names` that is an executable file in the sandbox's usual binary dirs.
std::string find_program(const nlohmann::json& names) {
  static const char* const kDirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
  for (const auto& n : names)
    for (const char* dir : kDirs) {
      const std::string path = std::string(dir) + "/" + n.get<std::string>();
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
  return "";
}

std::string resolve_in_sandbox(const nlohmann::json& req) {
  auto r = resolve_in_root(req.value("path", ""), req.value("cwd", "/"));
  if (!r) return dump({{"error", r.error().message()}});
  return dump({{"path", r->path},
               {"exists", r->exists},
               {"isDir", r->is_dir},
               {"program", find_program(req.value("which", nlohmann::json::array()))}});
}

}  // namespace

const std::vector<ToolSpec>& all_tools() {
  static const std::vector<ToolSpec> kTools = {read_spec(), bash_spec(), edit_spec(), write_spec(), grep_spec(), find_spec(), ls_spec()};
  return kTools;
}

const ToolSpec* find_tool(std::string_view name) {
  for (const auto& t : all_tools())
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string> command_to_judge(std::string_view tool, const nlohmann::json& args) {
  if (tool != "bash" || !args.contains("command") || !args["command"].is_string()) return std::nullopt;
  return args["command"].get<std::string>();
}

void take_mutation_ticket(const std::string& tool, CallContext& ctx) {
  const ToolSpec* spec = find_tool(tool);
  if (spec == nullptr || !spec->mutates || ctx.mutation_ticket) return;
  MutationQueue& queue = ctx.mutations ? *ctx.mutations : MutationQueue::process_default();
  ctx.mutation_ticket = std::make_shared<MutationQueue::Ticket>(queue.enter());
}

ToolResult execute(const std::string& tool, const nlohmann::json& arguments, CallContext& ctx) {
  const ToolSpec* spec = find_tool(tool);
  if (spec == nullptr)
    return ToolResult::error("unknown tool " + moat::quoted(tool) + "; the available tools are: " + tool_names());
  std::vector<std::string> notes;
  const nlohmann::json args = repair_arguments(tool, arguments, spec->parameters, &notes);
  const auto errors = validate_against_schema(args, spec->parameters);
  if (!errors.empty()) {
    std::string msg = "invalid arguments for " + tool + ":";
    for (const auto& e : errors) msg += "\n- " + e;
    msg += "\nThe schema is: " + spec->parameters.dump();
    return ToolResult::error(msg);
  }
  // The boundary of the tools: nothing a tool throws (a JSON accessor on a shape the
  // schema let through) may reach moatd's thread.
  try {
    ToolResult r = execute_validated(*spec, args, ctx);
    if (!notes.empty()) r.details["repairs"] = notes;
    return r;
  } catch (const std::exception& e) {
    return ToolResult::error(tool + " failed: " + e.what());
  }
}

std::string handle_in_sandbox(std::string_view request) {
  try {
    const auto req = decode_byte_strings(nlohmann::json::parse(request, nullptr, false));
    if (req.is_discarded() || !req.is_object()) return dump({{"error", "malformed request"}});
    const std::string op = req.value("op", "");
    if (op == "resolve") return resolve_in_sandbox(req);
    if (const FileTool* ft = find_file_tool(op))
      return dump(ft->op(req.value("path", ""), req.value("args", nlohmann::json::object())).to_json());
    return dump({{"error", "unknown operation " + moat::quoted(op)}});
  } catch (const std::exception& e) {
    return dump({{"error", std::string("handler failed: ") + e.what()}});
  }
}

}  // namespace moat::tools
