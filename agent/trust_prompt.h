// agent/trust_prompt.h: before moatd starts, the person decides whether the workspace's
// project policy (.moat/policy.toml) is trusted. Headless runs never trust; they warn.
#pragma once

#include <string>

namespace moat::agent {

// Interactive: when the project policy is unpinned, or changed since it was pinned, shows
// its path and SHA-256 on stderr and asks; "y" pins that hash in the trust directory
// (policy::default_trust_dir()). moatd loads the layer only while the file's hash, which it
// computes itself, equals the pin, so this answer is the person's, never the agent's.
// Headless: never pins; says on stderr that the project policy will be skipped and why.
// The answer is read from `in_fd` a byte at a time, so no line meant for later (the
// answers to moatd's questions) is swallowed by a buffer.
void settle_project_trust(const std::string& workspace, bool headless, int in_fd);

}  // namespace moat::agent
