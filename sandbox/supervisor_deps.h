// sandbox/supervisor_deps.h: what a session is built from (the policy loader, the audit
// opener, the session factory), injected so the supervisor and the hello's steps run on fakes.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "policy/policy.h"
#include "sandbox/session.h"
#include "sandbox/session_audit.h"
#include "sandbox/supervisor_options.h"

namespace moat::sandbox {

// What a session is built from, passed in so the supervisor can be tested with fakes on a
// machine without namespaces (ninja's DiskInterface); the defaults are the real ones.
struct SupervisorDeps {
  std::function<Result<std::unique_ptr<policy::Policy>>(const policy::LoadOptions&)> load_policy =
      &policy::Policy::load;
  std::function<Result<OpenedAudit>(const SupervisorOptions&, const std::string& session,
                                    const std::string& policy_hash, uid_t peer_uid)>
      open_audit = &open_session_audit;
  std::function<Result<std::unique_ptr<Session>>(const SessionConfig&)> create_session =
      &Session::create;
};

}  // namespace moat::sandbox
