// sandbox/session_description.h: what a session applied and what it was allowed to run without,
// as its init reports it with kReady (InitLayers) and as Session::describe gives the whole
// session (SessionDescription: the welcome's and the audit's session.start "sandbox"). A bottom
// header: the init, Session::create, the session and moatd's hello read it.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// A layer the session runs without (allow_without let it) and why: the layer's error message.
using SkippedLayers = std::map<std::string, std::string>;

// The layers the init sets up. Each is applied (true) or skipped (false, its reason in
// `skipped`); unset only when setup stopped before it, and then no session exists.
struct InitLayers {
  std::optional<bool> seccomp, exec_watch, landlock;
  std::optional<int> landlock_abi;      // with landlock: the kernel's Landlock ABI
  std::optional<bool> landlock_scoped;  // with landlock: signals and abstract sockets scoped
  SkippedLayers skipped;
};

// The whole session: the init's layers, then what moatd set up around the init.
struct SessionDescription {
  InitLayers layers;                    // `skipped` also holds moatd's own (idmap, cgroup)
  std::vector<std::string> namespaces;  // each unshared (all of them: no session runs without)
  bool rootless = false;
  std::string uid_map;  // the user namespace's uid_map line, without its newline
  bool idmap = false;   // the workspace is idmapped to the sandbox's ids
  bool cgroup = false;  // the session is bounded by its own cgroup
  std::optional<std::vector<std::string>> cgroup_dirs;  // when moatd made one
  // Built ahead of its hello by moatd's pool (session_pool.h); the key is there only when true.
  bool pooled = false;
};

// One encoder each. The session's is the one object moatd shows and records:
// {"user_ns":true,...,"seccomp":true,"landlock":false,...,"skipped":{"landlock":"reason"}}.
nlohmann::json to_json(const InitLayers& layers);
nlohmann::json to_json(const SessionDescription& d);

// kReady's text back (the init writes it with dump_lossless); an error names the field.
Result<InitLayers> init_layers_from_text(std::string_view text);

}  // namespace moat::sandbox
