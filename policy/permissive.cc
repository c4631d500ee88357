// policy/permissive.cc: a policy that allows every command but the organisation's (see
// permissive.h).
#include "policy/permissive.h"

#include <utility>

namespace moat::policy {
namespace {

// What the organisation decided stays, and so does what a --policy file given with it adds: a
// permissive session loosens the default, the person's own and the project's layers.
Decision loosened(Decision d) {
  if (d.verdict == Verdict::kAllow || d.deciding.layer == "system" || d.deciding.layer == "cli")
    return d;
  d.verdict = Verdict::kAllow;
  d.decided_by = DecidedBy::kPermissive;
  d.headless_downgraded = false;
  d.reason = "allowed by --permissive (the rule " + d.deciding.id + " would have said " +
             (d.reason.empty() ? std::string("no") : d.reason) + ")";
  return d;
}

class PermissivePolicy final : public Policy {
 public:
  explicit PermissivePolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  using Policy::decide_tool;
  Decision decide_tool(const std::string& tool, const nlohmann::json& args,
                       const ToolHints& hints) const override {
    return loosened(inner_->decide_tool(tool, args, hints));
  }
  Decision decide_command(const std::string& line, const std::string& cwd) const override {
    return loosened(inner_->decide_command(line, cwd));
  }
  Decision decide_exec(const ExecFacts& facts) const override {
    return loosened(inner_->decide_exec(facts));
  }
  // Already only the system and cli layers bind what the person typed: nothing to loosen.
  Decision decide_typed(const std::string& line, const std::string& cwd) const override {
    return inner_->decide_typed(line, cwd);
  }
  Decision decide_path(const std::string& path, Access access) const override {
    return inner_->decide_path(path, access);
  }
  ResourceCeilings resources() const override { return inner_->resources(); }
  std::vector<std::string> protected_globs() const override { return inner_->protected_globs(); }
  std::vector<std::string> unreadable_globs() const override { return inner_->unreadable_globs(); }
  Result<std::vector<std::string>> denied_globs_under(const std::string& root,
                                                      Access access) const override {
    return inner_->denied_globs_under(root, access);
  }
  bool audit_required() const override { return inner_->audit_required(); }
  nlohmann::json layers_json() const override { return inner_->layers_json(); }
  std::string policy_hash() const override { return inner_->policy_hash(); }
  Decision decide_network(const std::string& host, int port) const override {
    return inner_->decide_network(host, port);
  }
  bool grants_network() const override { return inner_->grants_network(); }
  bool may_allow_network_host(const std::string& host) const override {
    return inner_->may_allow_network_host(host);
  }
  bool mode_allowed(const std::string& mode) const override { return inner_->mode_allowed(mode); }
  bool headless() const override { return inner_->headless(); }
  bool nested_git_allowed() const override { return inner_->nested_git_allowed(); }
  const std::vector<std::string>& notices() const override { return inner_->notices(); }
  const std::vector<McpServerConfig>& mcp_servers() const override {
    return inner_->mcp_servers();
  }
  nlohmann::json project_json() const override { return inner_->project_json(); }
  nlohmann::json rules_json() const override { return inner_->rules_json(); }
  std::string expand_path(const std::string& path) const override {
    return inner_->expand_path(path);
  }

 private:
  std::unique_ptr<Policy> inner_;
};

}  // namespace

std::unique_ptr<Policy> make_permissive(std::unique_ptr<Policy> inner) {
  return std::make_unique<PermissivePolicy>(std::move(inner));
}

}  // namespace moat::policy
