// agent/moatd_start.cc: starting a private moatd or connecting to a shared one (moatd_start.h).
#include "agent/moatd_start.h"

#include <cstdio>
#include <cstdlib>

#include "agent/cli.h"
#include "agent/resident.h"
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
  cmd.add_flag("--private", o.private_moatd,
               "Start a moatd of this command's own, not the resident one under "
               "$XDG_RUNTIME_DIR/moat (an option only a private moatd takes, such as --policy or "
               "--audit-dir, chooses one too)");
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

// The environment variables that set a moatd's directories: a resident moatd keeps the ones it
// was started with, so a command that sets one gets its own moatd.
constexpr const char* kPrivateOnlyVariables[] = {"MOAT_POLICY_DIR", "MOAT_USER_POLICY_DIR",
                                                 "MOAT_AUDIT_DIR", "MOAT_SESSIONS_DIR",
                                                 "MOAT_TRUST_DIR"};

Result<std::unique_ptr<MoatdClient>> connect_to(const std::string& socket_path,
                                                const MoatdPassThrough& o) {
  // A shared moatd's policy is its operator's: a client's options (and its MOAT_POLICY_DIR
  // and MOAT_USER_POLICY_DIR, which only a private moatd inherits) cannot change it.
  if (const char* option = private_policy_option(o))
    return fail(std::string(option) +
                " sets the policy of a private moatd; a shared moatd's (--connect) is its "
                "operator's");
  return MoatdClient::connect(socket_path);
}

// The resident moatd, or null with a notice on stderr saying why a private one is used.
std::unique_ptr<MoatdClient> reach_resident(const std::string& runtime_dir,
                                            const MoatdPassThrough& o) {
  auto dir = resident_dir(runtime_dir);
  auto client = dir ? connect_resident(*dir) : Result<std::unique_ptr<MoatdClient>>(
                                                   fail(dir.error()));
  if (!client) {
    std::fprintf(stderr, "moat: %s; using a private moatd\n", client.error().message().c_str());
    return nullptr;
  }
  // Its exec frames are what the person typed only if the resident moatd's own check of
  // this process agrees (sandbox/resident_peer.h).
  if (o.typed_exec) (*client)->ask_typed_exec();
  return std::move(*client);
}

// A private moatd of this command's own, on a socketpair, with the options handed through.
Result<std::unique_ptr<MoatdClient>> start_private(const MoatdPassThrough& o, bool console) {
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

}  // namespace

const char* private_only_option(const MoatdPassThrough& o) {
  if (const char* option = private_policy_option(o)) return option;
  if (!o.audit_dir.empty()) return "--audit-dir";
  if (!o.sessions_dir.empty()) return "--sessions-dir";
  if (!o.allow_without.empty()) return "--allow-without";
  for (const char* v : kPrivateOnlyVariables)
    if (std::getenv(v) != nullptr) return v;
  return nullptr;
}

Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o, bool console) {
  if (o.private_moatd && !socket_path.empty())
    return fail(std::string("--private and --connect each name the moatd to use; give one"));
  MOAT_ASSIGN_OR_RETURN(
      const MoatdChoice choice,
      choose_moatd(o.private_moatd, socket_path, private_only_option(o) != nullptr));
  if (choice.way == MoatdWay::kConnect) return connect_to(choice.socket, o);
  if (choice.way == MoatdWay::kSystem) {
    // The operator's moatd; one that does not answer (stopped, not yet activated) leaves the
    // person a private one, which loads the same system policy layer.
    auto client = connect_to(choice.socket, o);
    if (client) return client;
    std::fprintf(stderr, "moat: the system moatd (%s) does not answer: %s; using a private moatd\n",
                 choice.socket.c_str(), client.error().message().c_str());
  }
  if (choice.way == MoatdWay::kResident) {
    if (auto client = reach_resident(choice.socket, o)) return client;
  }
  return start_private(o, console);
}

}  // namespace moat::agent
