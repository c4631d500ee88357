// sandbox/doctor.h: which isolation layers this machine supports (moat doctor).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace moat::sandbox {

// {"user_ns":{"ok":true,"reason":"..."}, "mount_ns":..., "pid_ns", "net_ns", "ipc_ns",
//  "uts_ns", "cgroup_ns", "seccomp", "landlock":{"ok":..,"abi":7}, "cgroup_v1", "cgroup_v2",
//  "idmap", "running_as_root":bool}. Each probe runs in a throwaway child process.
nlohmann::json doctor_report();

// {"ok":..,"reason":..,"path":exe}: whether `exe` (moat's find_moatd: $MOATD_BIN, else next
// to moat) starts and answers `--version` with this moat's version, within 10 s.
nlohmann::json probe_moatd(const std::string& exe);

// The report's last line: "ready: ..." when every layer a session needs and moatd are there,
// else "NOT READY: " and what is missing. `ready` is set to which.
std::string doctor_verdict(const nlohmann::json& report, bool& ready);

}  // namespace moat::sandbox
