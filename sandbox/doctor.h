// sandbox/doctor.h: which isolation layers this machine supports (moat doctor).
#pragma once

#include <nlohmann/json.hpp>

namespace moat::sandbox {

// {"user_ns":{"ok":true,"reason":"..."}, "mount_ns":..., "pid_ns", "net_ns", "ipc_ns",
//  "uts_ns", "cgroup_ns", "seccomp", "landlock":{"ok":..,"abi":7}, "cgroup_v1", "cgroup_v2",
//  "idmap", "running_as_root":bool}. Each probe runs in a throwaway child process.
nlohmann::json doctor_report();

}  // namespace moat::sandbox
