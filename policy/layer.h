// policy/layer.h: finding and reading the layers (builtin, system, user, project, cli),
// the system layer's ownership check, and the project layer's trust pin.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "policy/load_options.h"
#include "policy/schema.h"

namespace moat::policy {

class Policy;  // policy.h, which is built from the layers (build_policy)

// The file name the built-in default policy's rules name (RuleRef::file, explain, audit).
inline constexpr const char* kBuiltinDefaultFile = "builtin:default.toml";

struct LoadedLayer {
  std::string kind;  // "builtin" | "system" | "user" | "project" | "cli"
  PolicyFile file;
};

enum class TrustState { kNoProjectPolicy, kTrusted, kUntrusted, kChanged };
const char* trust_state_name(TrustState s);  // "none" | "trusted" | "untrusted" | "changed"

// The project layer: the repository's .moat/policy.toml and the MCP server declarations
// imported from its .mcp.json and .vscode/mcp.json (policy/mcp_import.h), trusted together.
struct ProjectTrust {
  TrustState state = TrustState::kNoProjectPolicy;  // kNoProjectPolicy: none of those files
  std::string root;     // the workspace root
  std::string file;     // <workspace>/.moat/policy.toml
  std::string policy_sha256;         // of its current bytes; empty when it does not exist
  std::vector<std::string> imports;  // the import files present (absolute)
  // What a pin holds: policy_sha256 when the policy file is the only project file, else a
  // hash over every present file's name and SHA-256 (any change unpins).
  std::string sha256;
  std::string pinned;   // the accepted hash, if any
  bool loaded = false;  // the load used it (trusted, and read with the pinned hash)
  std::string skipped;  // why it was not loaded (empty when loaded or absent)
};

// The files a pin covers, for a notice or a question: "<ws>/.moat/policy.toml", "<ws>/.mcp.json"
// or both, comma-separated.
std::string project_files(const ProjectTrust& t);

// Every layer in precedence order (builtin or system first, cli last). Parse errors in
// any layer fail the load; so does a system directory or file that is not root-owned or
// is group/world-writable. `notices` gets what was skipped and why; `project`, if given,
// what became of the project layer.
Result<std::vector<LoadedLayer>> load_layers(const LoadOptions& options,
                                             std::vector<std::string>* notices,
                                             ProjectTrust* project = nullptr);

// Root-owned and not writable by group or others (lstat: a symlink is refused).
Result<void> check_root_owned(const std::string& path);

// The text of the compiled-in default policy (also shipped as examples/policies/default.toml).
std::string_view builtin_default_policy_text();

// Parses the built-in default now, once per process, as the first load_layers would (0.8 ms of
// CPU, OpenSSL's first digest among it): moatd calls it on a thread of its own at start, so a
// private moatd's hello finds it parsed, or waits for the parse already under way.
void parse_builtin_default();

// Combines loaded layers into the effective policy (policy.cc).
Result<std::unique_ptr<Policy>> build_policy(std::vector<LoadedLayer> layers,
                                             const LoadOptions& options,
                                             std::vector<std::string> notices,
                                             ProjectTrust project = {});

// $MOAT_TRUST_DIR, else $XDG_STATE_HOME/moat/trust (~/.local/state/moat/trust).
std::string default_trust_dir();
std::string default_user_dir();
// The project policy's state: its current SHA-256 against the pin for this workspace.
Result<ProjectTrust> project_trust(const std::string& workspace, const std::string& trust_dir);
// The hash a pin holds over the project files present, each as (workspace-relative name,
// SHA-256 of its bytes) in the order .moat/policy.toml, then kMcpImportFiles: a change to any
// of them unpins the workspace. moatd recomputes it beneath the workspace fd (hello_steps.cc).
std::string project_content_hash(const std::vector<std::pair<std::string, std::string>>& files);
// Records that the person accepted `sha256` for this workspace's project policy. Refused
// when the trust dir lies inside the workspace (sandboxed code could write its own pin).
Result<void> pin_project(const std::string& workspace, const std::string& trust_dir,
                         const std::string& sha256);
// Removes the pin (no pin is not an error): the project policy is asked about again.
Result<void> revoke_project(const std::string& workspace, const std::string& trust_dir);

}  // namespace moat::policy
