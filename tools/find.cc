// tools/find.cc: `find`.
#include "tools/find.h"

#include <algorithm>

#include <fcntl.h>

#include "tools/gitignore.h"
#include "tools/resolve.h"
#include "tools/glob.h"
#include "tools/schema.h"
#include "tools/truncate.h"
#include "tools/walk.h"

namespace moat::tools {
namespace {

std::vector<std::string> matching_files(const std::string& root, const nlohmann::json& args) {
  const std::string pattern = args.at("pattern").get<std::string>();
  GitIgnore ignore;
  std::vector<std::string> out;
  if (args.contains("_listed")) {
    for (const auto& p : args["_listed"]) {
      const std::string path = p.get<std::string>();
      if (path.size() <= root.size() + 1 || path.compare(0, root.size(), root) != 0) continue;
      const std::string rel = root == "/" ? path.substr(1) : path.substr(root.size() + 1);
      if (ignore.is_excluded_below(root, path, false)) continue;
      if (glob_match_relative(pattern, rel)) out.push_back(rel);
    }
  } else {
    for (const WalkEntry& e : walk_tree(root, ignore))
      if ((e.type == EntryType::kFile || e.type == EntryType::kSymlink) &&
          glob_match_relative(pattern, e.rel))
        out.push_back(e.rel);
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return path_less(a, b); });
  return out;
}

ToolSpec find_spec(const ToolLimits&) {
  ToolSpec s;
  s.description =
      "Find files by glob pattern (e.g. '*.ts', 'src/**/*.json'; a pattern without '/' matches "
      "file names at any depth). Includes dotfiles, leaves out what .gitignore ignores, returns "
      "paths relative to the search directory, sorted. Returns at most " +
      std::to_string(kFindDefaultLimit) + " paths by default (set limit for more) and at most " +
      format_size(kMaxBytes) + " of output.";
  s.parameters = object_schema(
      {{"pattern", property("string", "Glob pattern to match files", {{"minLength", 1}})},
       {"path", property("string", "Directory to search in (default: the workspace)")},
       {"limit", limit_property("results", kFindDefaultLimit)}},
      {"pattern"});
  return s;
}

ToolResult find_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  if (!open_canonical(canonical, O_PATH | O_DIRECTORY))
    return ToolResult::error(canonical + " is not a directory");
  auto files = matching_files(canonical, args);
  if (files.empty()) return ToolResult::text("No files found matching pattern");
  const std::size_t total = files.size();
  CappedList list = cap_list(std::move(files), args.value("limit", kFindDefaultLimit), "results",
                             ", or refine pattern");
  ToolResult r = ToolResult::text(append_notices(std::move(list.truncation.text), list.notices));
  r.details = {{"matches", total}, {"truncated", !list.notices.empty()}};
  return r;
}

// Every file and symlink below `canonical` as fdfind lists it inside the sandbox (no ignore
// files: .gitignore is applied by find_in_sandbox, identically to the walk).
Result<std::vector<std::string>> list_with_fd(const std::string& fd, const std::string& canonical,
                                              CallContext& ctx) {
  std::string out;
  bool overflow = false;
  std::atomic<bool> stop{false};
  auto status = ctx.runner->exec(
      {fd, "--hidden", "--no-ignore", "--exclude", ".git", "--type", "f", "--type", "l", "--color",
       "never", "--absolute-path", "--print0", ".", canonical},
      ctx.workspace, ctx.limits.default_timeout_s,
      [&](std::string_view chunk) {
        if (out.size() + chunk.size() > ctx.limits.output_ceiling) {
          overflow = true;
          stop = true;
          return;
        }
        out.append(chunk);
      },
      &stop);
  if (!status) return fail(status.error());
  if (overflow) return fail("fdfind listed more than " + format_size(ctx.limits.output_ceiling));
  if (status->exit_code != 0 || status->signal != 0)
    return fail("fdfind failed (exit " + std::to_string(status->exit_code) +
                "): " + out.substr(0, 500));
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t nl = out.find('\0', start);  // --print0: names may hold newlines
    if (nl == std::string::npos) nl = out.size();
    std::string p = out.substr(start, nl - start);
    start = nl + 1;
    if (p.size() > 1 && p.back() == '/') p.pop_back();
    if (!p.empty()) paths.push_back(std::move(p));
  }
  return paths;
}

// fdfind lists, then the worker filters and formats that list as it does its own walk's.
ToolResult find_with_fd(const Target& target, const nlohmann::json& args, CallContext& ctx,
                        const InWorker& in_worker) {
  if (!target.is_dir) return ToolResult::error(target.canonical + " is not a directory");
  auto listed = list_with_fd(target.program, target.canonical, ctx);
  if (!listed) return ToolResult::error("find failed: " + listed.error().message());
  nlohmann::json op_args = args;
  op_args["_listed"] = std::move(*listed);
  return in_worker(op_args);
}

}  // namespace

const Tool kFindTool = {.name = "find",
                        .spec = &find_spec,
                        .file = search_op(&find_in_sandbox, {"fdfind", "fd"}, &find_with_fd),
                        .explores = true};

}  // namespace moat::tools
