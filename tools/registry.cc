// tools/registry.cc: the table of tool rows, what the rest of moat asks of it, execute()
// (repair -> validate -> resolve -> authorize -> run) and the worker-side dispatch of
// handle_in_sandbox().
#include "tools/registry.h"

#include <unistd.h>

#include <algorithm>
#include <exception>

#include "base/log.h"
#include "tools/bash.h"
#include "tools/edit.h"
#include "tools/find.h"
#include "tools/grep.h"
#include "tools/ls.h"
#include "tools/read.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/worker_ops.h"
#include "tools/write.h"

namespace moat::tools {

// The table: every tool, in the order the model sees them. Adding a tool is its own file
// and one line here.
const std::vector<const Tool*>& tool_table() {
  static const std::vector<const Tool*> kRows = {&kReadTool, &kBashTool, &kEditTool, &kWriteTool,
                                                 &kGrepTool, &kFindTool, &kLsTool};
  return kRows;
}

namespace {

// A row's spec for these limits, named after the row.
ToolSpec spec_of(const Tool& tool, const ToolLimits& limits) {
  ToolSpec spec = tool.spec(limits);
  spec.name = std::string(tool.name);
  return spec;
}

// The row of a tool whose work is a file operation, by the name a worker request carries.
const FileOp* file_op_of(std::string_view name) {
  const Tool* row = row_of(name);
  return row != nullptr && row->file ? &*row->file : nullptr;
}

std::string tool_names() {
  std::string out;
  for (const auto& t : all_tools()) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

Result<Target> resolve_target(const FileOp& tool, const std::string& path, CallContext& ctx) {
  ResolveRequest request{path, ctx.workspace, {}};
  if (ctx.use_external_search) request.which = tool.external;
  MOAT_ASSIGN_OR_RETURN(std::string bytes, ctx.runner->run_handler(encode(request)));
  MOAT_ASSIGN_OR_RETURN(ResolveReply r, decode_resolve_reply(bytes));
  if (!r.error.empty()) return fail("could not resolve " + path + ": " + r.error);
  Target t{r.path, r.is_dir, r.program};
  if (tool.must_exist && !r.exists)
    return fail("path not found: " + path + " (resolved to " + t.canonical + ")");
  return t;
}

// One operation in a worker running handle_in_sandbox().
Result<OpReply> call_worker(CallContext& ctx, const OpRequest& request) {
  MOAT_ASSIGN_OR_RETURN(std::string bytes, ctx.runner->run_handler(encode(request)));
  return decode_op_reply(bytes);
}

// The operation itself: the external back end when the sandbox has one, else the worker's.
ToolResult run_operation(const Tool& tool, const Target& target, const nlohmann::json& args,
                         CallContext& ctx) {
  const std::string name(tool.name);
  const InWorker in_worker = [&](const nlohmann::json& op_args) {
    auto reply = call_worker(ctx, {name, target.canonical, op_args});
    if (!reply)
      return ToolResult::error(name + " failed in the sandbox: " + reply.error().message());
    if (!reply->error.empty())
      return ToolResult::error(name + " failed in the sandbox: " + reply->error);
    return std::move(reply->result);
  };
  if (!target.program.empty() && tool.file->run_external)
    return tool.file->run_external(target, args, ctx, in_worker);
  return in_worker(args);
}

// resolve -> authorize (moatd checks the policy and audits) -> queue (mutations) -> run.
ToolResult run_file_tool(const Tool& tool, const ToolSpec& spec, const nlohmann::json& args,
                         CallContext& ctx) {
  const FileOp& op = *tool.file;
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
  const std::string path =
      args.contains("path") ? args["path"].get<std::string>() : op.default_path;
  auto target = resolve_target(op, path, ctx);
  if (!target) return ToolResult::error(target.error().message());
  // Named before the policy is asked: a call waiting for a person's answer holds back only
  // later calls on its own path.
  if (spec.mutates) queue.name(*ctx.mutation_ticket, target->canonical);
  if (ctx.authorize) {
    if (auto refusal = ctx.authorize(target->canonical, op.access))
      return ToolResult::error("refused by policy: " + *refusal);
  }
  if (spec.mutates) queue.acquire(*ctx.mutation_ticket, target->canonical);
  return run_operation(tool, *target, args, ctx);
}

ToolResult execute_validated(const Tool& tool, const ToolSpec& spec, const nlohmann::json& args,
                             CallContext& ctx) {
  if (ctx.runner == nullptr) return ToolResult::error("no sandbox to run " + spec.name + " in");
  if (tool.run != nullptr) return tool.run(args, ctx);
  if (tool.file) return run_file_tool(tool, spec, args, ctx);
  return ToolResult::error("internal error: no handler for tool " + spec.name);
}

// The first of `names` that is an executable file in the sandbox's usual binary dirs.
std::string find_program(const std::vector<std::string>& names) {
  static const char* const kDirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
  for (const auto& n : names)
    for (const char* dir : kDirs) {
      const std::string path = std::string(dir) + "/" + n;
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
  return "";
}

ResolveReply resolve_in_sandbox(const ResolveRequest& req) {
  auto r = resolve_in_root(req.path, req.cwd);
  if (!r) return {.error = r.error().message()};
  return {.path = r->path, .exists = r->exists, .is_dir = r->is_dir,
          .program = find_program(req.which)};
}

// The worker's answer to one decoded request.
std::string answer_in_sandbox(const WorkerRequest& request) {
  if (const auto* resolve = std::get_if<ResolveRequest>(&request))
    return encode(resolve_in_sandbox(*resolve));
  const auto& op = std::get<OpRequest>(request);
  if (const FileOp* file = file_op_of(op.op)) return encode(OpReply{"", file->op(op.path, op.args)});
  return encode(OpReply{"unknown operation " + moat::quoted(op.op), {}});
}

}  // namespace

bool GrantedTools::has(std::string_view name) const {
  return std::any_of(tools.begin(), tools.end(), [&](const Tool* t) { return t->name == name; });
}

bool GrantedTools::any_explores() const {
  return std::any_of(tools.begin(), tools.end(), [](const Tool* t) { return t->explores; });
}

const Tool* row_of(std::string_view name) {
  for (const Tool* t : tool_table())
    if (t->name == name) return t;
  return nullptr;
}

std::vector<ToolSpec> all_tools(const ToolLimits& limits) {
  std::vector<ToolSpec> specs;
  for (const Tool* t : tool_table()) specs.push_back(spec_of(*t, limits));
  return specs;
}

const std::vector<ToolSpec>& all_tools() {
  static const std::vector<ToolSpec> kTools = all_tools(ToolLimits{});
  return kTools;
}

const ToolSpec* find_tool(std::string_view name) {
  for (const auto& t : all_tools())
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string> command_to_judge(std::string_view tool, const nlohmann::json& args) {
  const Tool* row = row_of(tool);
  if (row == nullptr || row->command == nullptr) return std::nullopt;
  return row->command(args);
}

namespace {

// "pattern=needle path=src": each argument as key=value, a string bare unless it holds a space.
std::string argument_words(const nlohmann::json& args) {
  if (!args.is_object()) return args.dump();
  std::string out;
  for (const auto& [key, value] : args.items()) {
    const bool bare = value.is_string() && !value.get_ref<const std::string&>().empty() &&
                      value.get_ref<const std::string&>().find(' ') == std::string::npos;
    out += (out.empty() ? "" : " ") + key + "=" + (bare ? value.get<std::string>() : value.dump());
  }
  return out;
}

}  // namespace

std::string call_summary(std::string_view tool, const nlohmann::json& args) {
  if (auto line = command_to_judge(tool, args)) return *line;
  if (auto file = touched_file(tool, args)) {
    const auto edits = args.find("edits");
    if (edits == args.end() || !edits->is_array()) return file->path;
    return file->path + " (" + std::to_string(edits->size()) + " edit" +
           (edits->size() == 1 ? ")" : "s)");
  }
  return argument_words(args);
}

std::optional<TouchedFile> touched_file(std::string_view tool, const nlohmann::json& args) {
  const Tool* row = row_of(tool);
  if (row == nullptr || row->file_argument == nullptr || !args.is_object()) return std::nullopt;
  auto it = args.find(row->file_argument);
  if (it == args.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    return std::nullopt;
  return TouchedFile{it->get<std::string>(), spec_of(*row, ToolLimits{}).mutates};
}

std::optional<std::string> written_content(std::string_view tool, const nlohmann::json& args) {
  const Tool* row = row_of(tool);
  if (row == nullptr || !row->file || row->file->must_exist || !args.is_object())
    return std::nullopt;
  auto it = args.find("content");
  if (it == args.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::vector<std::string> guidelines(const std::vector<std::string>& granted_names) {
  GrantedTools granted;
  for (const auto& n : granted_names)
    if (const Tool* row = row_of(n)) granted.tools.push_back(row);
  std::vector<Guideline> all;
  if (granted.any_explores())
    all.push_back({GuidelineSlot::kExplore,
                   "Explore with grep, find and ls before bash: they are bounded and faster."});
  for (const Tool* t : tool_table())  // table order within a slot
    if (t->guidance != nullptr && granted.has(t->name))
      for (auto& g : t->guidance(granted)) all.push_back(std::move(g));
  std::stable_sort(all.begin(), all.end(),
                   [](const Guideline& a, const Guideline& b) { return a.slot < b.slot; });
  std::vector<std::string> lines;
  for (auto& g : all) lines.push_back(std::move(g.text));
  const bool can_change = std::any_of(granted.tools.begin(), granted.tools.end(),
                                      [](const Tool* t) { return t->changes_files; });
  if (!can_change)
    lines.push_back("You cannot modify files: describe the changes you would make instead.");
  return lines;
}

CommandCall command_call(const std::string& line, double timeout_s) {
  nlohmann::json args = {{"command", line}};
  if (timeout_s > 0) args["timeout"] = timeout_s;
  return {std::string(kBashTool.name), std::move(args)};
}

nlohmann::json repair_arguments(std::string_view tool, nlohmann::json args,
                                std::vector<std::string>* notes) {
  const Tool* row = row_of(tool);
  if (row == nullptr) return args;
  args = repair_to_schema(std::move(args), spec_of(*row, ToolLimits{}).parameters, notes);
  if (row->repair != nullptr && args.is_object()) row->repair(args, notes);
  return args;
}

void take_mutation_ticket(const std::string& tool, CallContext& ctx) {
  const ToolSpec* spec = find_tool(tool);
  if (spec == nullptr || !spec->mutates || ctx.mutation_ticket) return;
  MutationQueue& queue = ctx.mutations ? *ctx.mutations : MutationQueue::process_default();
  ctx.mutation_ticket = std::make_shared<MutationQueue::Ticket>(queue.enter());
}

ToolResult execute(const std::string& tool, const nlohmann::json& arguments, CallContext& ctx) {
  const Tool* row = row_of(tool);
  if (row == nullptr)
    return ToolResult::error("unknown tool " + moat::quoted(tool) +
                             "; the available tools are: " + tool_names());
  const ToolSpec spec = spec_of(*row, ctx.limits);
  std::vector<std::string> notes;
  const nlohmann::json args = repair_arguments(tool, arguments, &notes);
  const auto errors = validate_against_schema(args, spec.parameters);
  if (!errors.empty()) {
    std::string msg = "invalid arguments for " + tool + ":";
    for (const auto& e : errors) msg += "\n- " + e;
    msg += "\nThe schema is: " + spec.parameters.dump();
    return ToolResult::error(msg);
  }
  // The boundary of the tools: nothing a tool throws (a JSON accessor on a shape the
  // schema let through) may reach moatd's thread.
  try {
    ToolResult r = execute_validated(*row, spec, args, ctx);
    if (!notes.empty()) r.details["repairs"] = notes;
    return r;
  } catch (const std::exception& e) {
    return ToolResult::error(tool + " failed: " + e.what());
  }
}

std::string handle_in_sandbox(std::string_view request) {
  try {
    auto decoded = decode_worker_request(request);
    if (!decoded) return encode(OpReply{decoded.error().message(), {}});
    return answer_in_sandbox(*decoded);
  } catch (const std::exception& e) {
    return encode(OpReply{std::string("handler failed: ") + e.what(), {}});
  }
}

}  // namespace moat::tools
