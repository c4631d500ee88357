// tools/edit.cc: `edit`: read, match (tools/edit_match), replace atomically, diff.
#include "tools/edit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/sys.h"
#include "tools/atomic_write.h"
#include "tools/diff.h"
#include "tools/edit_match.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

Result<std::string> read_regular_file(const std::string& canonical) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_canonical(canonical, O_RDONLY | O_NOCTTY | O_NONBLOCK));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(Error::from_errno("fstat", errno, canonical));
  if (S_ISDIR(st.st_mode)) return fail(Error{EISDIR, canonical + " is a directory"});
  if (!S_ISREG(st.st_mode)) return fail(Error{EINVAL, canonical + " is not a regular file"});
  if (static_cast<std::size_t>(st.st_size) > kMaxReadFileBytes)
    return fail(Error{EFBIG, canonical + " is too large to edit (" +
                                 format_size(static_cast<std::size_t>(st.st_size)) + ")"});
  auto text = sys::read_to_end(fd.get());
  if (!text) return fail(Error::from_errno("read", text.error().code, canonical));
  return text;
}

ToolSpec edit_spec(const ToolLimits&) {
  ToolSpec s;
  s.description =
      "Edit a file by replacing exact text. Each edits[].oldText must match a unique, "
      "non-overlapping region of the original file (include enough context to make it "
      "unique); all edits are matched against the original and applied together. If an exact "
      "match fails, matching retries ignoring trailing whitespace, Unicode quotes, dashes and "
      "spaces. Line endings (CRLF) and a BOM are preserved. Returns a unified diff.";
  const nlohmann::json edit_item =
      object_schema({{"oldText", property("string", "Exact text to replace", {{"minLength", 1}})},
                     {"newText", property("string", "Text to put in its place")}},
                    {"oldText", "newText"});
  s.parameters = object_schema(
      {{"path",
        property("string", "Path to the file to edit (relative to the workspace or absolute)",
                 {{"minLength", 1}})},
       {"edits", property("array", "Replacements, matched against the original file",
                          {{"minItems", 1}, {"items", edit_item}})}},
      {"path", "edits"});
  s.mutates = true;
  return s;
}

ToolResult edit_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  const std::string shown = args.value("path", canonical);
  auto original = read_regular_file(canonical);
  if (!original)
    return ToolResult::error("cannot edit " + shown + ": " + original.error().message());
  std::vector<EditSpec> edits;
  for (const auto& e : args.at("edits"))
    edits.push_back({e.at("oldText").get<std::string>(), e.at("newText").get<std::string>()});
  auto outcome = apply_edits(*original, edits, shown);
  if (!outcome) return ToolResult::error(outcome.error().message());
  if (auto w = replace_file(canonical, outcome->content, /*create_parents=*/false); !w)
    return ToolResult::error("cannot write " + shown + ": " + w.error().message());
  const std::string diff = sanitize_utf8(unified_diff(*original, outcome->content, shown));
  ToolResult r = ToolResult::text(
      "Applied " + std::to_string(edits.size()) + " edit(s) to " + shown +
      (outcome->normalised ? " (matched ignoring whitespace/Unicode lookalikes)" : "") + ".\n\n" +
      diff);
  r.details = {{"diff", diff},
               {"normalisedMatch", outcome->normalised},
               {"path", canonical},
               {"filesMutated", {canonical}}};
  return r;
}

// A single replacement given at the top level becomes edits[0] (models often send the
// one-edit shape of other agents' edit tools).
void fold_top_level_edit(nlohmann::json& args, std::vector<std::string>* notes) {
  if (!args.is_object() || (!args.contains("oldText") && !args.contains("newText"))) return;
  nlohmann::json one = nlohmann::json::object();
  for (const char* k : {"oldText", "newText"})
    if (args.contains(k)) {
      one[k] = args[k];
      args.erase(k);
    }
  if (!args.contains("edits") || !args["edits"].is_array()) args["edits"] = nlohmann::json::array();
  args["edits"].push_back(std::move(one));
  notes->push_back("oldText/newText: folded into edits[]");
}

std::vector<Guideline> edit_guidance(const GrantedTools&) {
  return {{GuidelineSlot::kChange,
           "Use edit for changes: the old text must match the file exactly and be unique."}};
}

}  // namespace

const Tool kEditTool = {.name = "edit",
                        .spec = &edit_spec,
                        .file = FileOp{.access = PathAccess::kWrite, .op = &edit_in_sandbox},
                        .repair = &fold_top_level_edit,
                        .file_argument = "path",
                        .changes_files = true,
                        .guidance = &edit_guidance};

}  // namespace moat::tools
