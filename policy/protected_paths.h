// policy/protected_paths.h: the workspace paths moat protects whatever the policy says, named
// once for the two places that enforce them: moatd masks them read-only before every call
// (sandbox/supervisor.cc, sandbox/protect.h), and the default policy's
// default.protected-meta rule denies writing them (tests/unit/policy/protected_paths_test.cc
// keeps that rule in step with this list).
#pragma once

namespace moat::policy {

// Workspace-relative. Git hooks and config run code outside the sandbox (as the person who
// later types `git commit`); .moat holds the project's policy layer, which must not be
// rewritten by the code it judges.
inline constexpr const char* kProtectedWorkspacePaths[] = {".git/hooks", ".git/config", ".moat"};

}  // namespace moat::policy
