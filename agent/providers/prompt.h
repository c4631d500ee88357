// agent/providers/prompt.h: the system prompt, assembled from blocks ordered by change-rate
// per byte so that consecutive requests share the longest byte-identical prefix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tools/tool.h"

namespace moat::agent::providers {

// A skill is announced by name, description and location only; the model reads the file
// when it needs it, so the index stays small and stable.
struct Skill {
  std::string name;
  std::string description;
  std::string location;
};

// A documentation route: where the model should look for a topic.
struct DocRoute {
  std::string topic;
  std::string location;
};

// AGENTS.md / CLAUDE.md found between the repository root and the workspace.
struct ProjectDoc {
  std::string path;
  std::string text;
};

struct PromptInputs {
  std::vector<tools::ToolSpec> tools;
  std::string workspace;  // the working directory as the model's tools see it
  std::vector<Skill> skills;
  std::vector<DocRoute> doc_routes;
  std::vector<ProjectDoc> project_docs;  // usually find_project_docs(workspace on the host)
};

struct PromptBlock {
  std::string name;  // role, tools, guidelines, docs, skills, project, cwd
  std::string text;
};

// In order: role, tool list, guidelines (a function of the tool set), documentation
// routes, skill index, project context, working directory. Empty blocks are left out.
// Nothing volatile (time, ids, git state) is included, and every string that came from the
// repository, a skill or a tool spec is XML-escaped, so it cannot close our tags.
std::vector<PromptBlock> system_prompt_blocks(const PromptInputs& inputs);
std::string assemble_system_prompt(const PromptInputs& inputs);  // the blocks joined

// AGENTS.md, then CLAUDE.md, of every directory from the repository root (the nearest
// ancestor holding .git; the workspace alone when there is none) down to `workspace`:
// outer files first, because they change less often. Each file is capped at kMaxDocBytes.
std::vector<ProjectDoc> find_project_docs(const std::string& workspace);
constexpr size_t kMaxDocBytes = 64 * 1024;

// & < > as entities (and " in an attribute's value); other control characters except \n and
// \t as &#xNN;. Apostrophes stay: our attributes are double-quoted.
std::string xml_escape(std::string_view text, bool attribute = false);

}  // namespace moat::agent::providers
