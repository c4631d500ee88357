// agent/moatd_start.cc: starting a private moatd or connecting to a shared one (moatd_start.h).
#include "agent/moatd_start.h"

#include "agent/cli.h"
#include "base/workspace_path.h"

namespace moat::agent {

void add_moatd_pass_through(CLI::App& cmd, MoatdPassThrough& o) {
  cmd.add_option("--audit-dir", o.audit_dir,
                 "Audit log directory of the private moatd (default $XDG_STATE_HOME/moat/audit)");
  add_policy_dir_options(cmd, o.system_policy_dir, o.user_policy_dir,
                         "Organisation policy directory (default /etc/moat/policy.d)",
                         "User policy directory (default $XDG_CONFIG_HOME/moat/policy.d)");
  // Repeatable options take one value per flag: CLI11 lets a vector option swallow the
  // words after it, and `moat run --policy FILE "task"` would take the task for a file.
  cmd.add_option("--policy", o.policy_files,
                 "An extra policy file, layered last (it may only narrow; repeatable)")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  cmd.add_flag("--no-default-policy", o.no_default_policy,
               "Leave out the built-in default policy: only the system, user, project and "
               "--policy layers decide (a private moatd only)");
  cmd.add_option("--allow-without", o.allow_without,
                 "Let the private moatd run sessions without this sandbox layer (repeatable)")
      ->allow_extra_args(false);
}

namespace {

// The first option given that only a private moatd takes; null when none is.
const char* private_policy_option(const MoatdPassThrough& o) {
  if (o.permissive) return "--permissive";
  if (o.no_default_policy) return "--no-default-policy";
  if (!o.system_policy_dir.empty()) return "--system-policy-dir";
  if (!o.user_policy_dir.empty()) return "--user-policy-dir";
  if (!o.policy_files.empty()) return "--policy";
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o, bool console) {
  if (!socket_path.empty()) {
    // A shared moatd's policy is its operator's: a client's options (and its MOAT_POLICY_DIR
    // and MOAT_USER_POLICY_DIR, which only a private moatd inherits) cannot change it.
    if (const char* option = private_policy_option(o))
      return fail(std::string(option) +
                  " sets the policy of a private moatd; a shared moatd's (--connect) is its "
                  "operator's");
    return MoatdClient::connect(socket_path);
  }
  std::vector<std::string> args;
  if (!o.audit_dir.empty()) args.insert(args.end(), {"--audit-dir", o.audit_dir});
  if (!o.sessions_dir.empty()) {
    auto abs = real_path(o.sessions_dir);
    args.insert(args.end(), {"--sessions-dir", abs ? *abs : o.sessions_dir});
  }
  if (!o.system_policy_dir.empty())
    args.insert(args.end(), {"--system-policy-dir", o.system_policy_dir});
  if (!o.user_policy_dir.empty()) args.insert(args.end(), {"--user-policy-dir", o.user_policy_dir});
  for (const auto& l : o.allow_without) args.insert(args.end(), {"--allow-without", l});
  if (o.no_default_policy) args.push_back("--no-default-policy");
  if (o.permissive) args.push_back("--permissive");
  if (o.typed_exec) args.push_back("--typed-exec");
  for (const auto& f : o.policy_files) {
    auto abs = real_path(f);
    args.insert(args.end(), {"--policy", abs ? *abs : f});
  }
  return MoatdClient::spawn_private(args, console);
}

}  // namespace moat::agent
