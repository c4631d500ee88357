// sandbox/session_pool_config.h: a SessionConfig as moatd sends it to a pooled keeper (kFinish,
// init_contract.h), which was forked before the hello it serves: one encoder, one decoder.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

// The most a kFinish record carries: its text, and its fds (the workspace, its tree, a bind's
// each). A config past either is built fresh instead (the pool's caller falls back).
inline constexpr std::size_t kMaxFinishBytes = 192 << 10;
inline constexpr std::size_t kMaxFinishFds = 64;

// Every field but the fds (each SessionBind::fd is sent attached, in order), workspace_fd and
// handler (the pooled keeper keeps the pool's).
std::string session_config_text(const SessionConfig& config);
// The text back; an error names the field that is missing or of the wrong type.
Result<SessionConfig> session_config_from_text(std::string_view text);

// A kFinish record as the pooled keeper, or an init built ahead (moatd as root), receives it:
// the config, the workspace fd, its tree (moatd's, or none: the keeper clones it) and each
// bind's fd, set in config.binds[i].fd and owned by the receiver from here on.
struct FinishRecord {
  SessionConfig config;
  UniqueFd workspace;
  UniqueFd tree;
};
// Reads one kFinish from `ctl`; each fd is checked against what the config says it carries.
// The handler is `pooled`'s (a pointer is not sent).
Result<FinishRecord> receive_finish(int ctl, const SessionConfig& pooled);

}  // namespace moat::sandbox
