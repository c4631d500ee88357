// sandbox/session_pool_config.h: a SessionConfig as moatd sends it to a pooled keeper (kFinish,
// init_contract.h), which was forked before the hello it serves: one encoder, one decoder.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"
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

}  // namespace moat::sandbox
