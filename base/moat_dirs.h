// base/moat_dirs.h: where moat keeps its own files by default (the XDG base directories and
// the MOAT_*_DIR overrides), resolved here only: moatd protects exactly the directories the
// rest of moat uses, so the two must never be computed twice (they once differed: the
// policy's $AUDIT_DIR ignored MOAT_AUDIT_DIR).
#pragma once

#include <cstdlib>
#include <string>

namespace moat::dirs {

// The variable's value when it is an absolute path (the XDG spec says to ignore a relative
// one), else "".
inline std::string absolute_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '/' ? std::string(v) : std::string();
}

// The variable's value when it is set and not empty, else "".
inline std::string nonempty_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::string();
}

// value when it is not empty, else fallback: every variable below overrides one default.
inline std::string or_default(std::string value, std::string fallback) {
  return value.empty() ? fallback : value;
}

inline std::string home() { return or_default(absolute_env("HOME"), "/"); }

inline std::string config_home() {
  return or_default(absolute_env("XDG_CONFIG_HOME"), home() + "/.config");
}

inline std::string state_home() {
  return or_default(absolute_env("XDG_STATE_HOME"), home() + "/.local/state");
}

// $XDG_CONFIG_HOME/moat: config.toml (providers, where the API key is sent) and policy.d.
inline std::string config() { return config_home() + "/moat"; }
inline std::string config_file() { return config() + "/config.toml"; }

// $XDG_STATE_HOME/moat: sessions, audit logs and project trust pins by default.
inline std::string state() { return state_home() + "/moat"; }

inline constexpr const char* kSystemPolicy = "/etc/moat/policy.d";

// The policy layers' directories when no --system-policy-dir / --user-policy-dir is given:
// MOAT_POLICY_DIR and MOAT_USER_POLICY_DIR mean the same to every command (moat policy, moat
// run, moat sandbox exec, moat batch and the private moatd they start, which inherits both),
// so `moat policy explain` and a run judge by the same layers. A shared moatd (--connect)
// reads its own environment, its operator's, never a client's.
inline std::string system_policy() {
  return or_default(nonempty_env("MOAT_POLICY_DIR"), kSystemPolicy);
}

inline std::string user_policy() {
  return or_default(nonempty_env("MOAT_USER_POLICY_DIR"), config() + "/policy.d");
}

inline std::string trust() {
  return or_default(nonempty_env("MOAT_TRUST_DIR"), state() + "/trust");
}

inline std::string sessions() {
  return or_default(nonempty_env("MOAT_SESSIONS_DIR"), state() + "/sessions");
}

// A system moatd's audit folder unless moatd.toml names another (systemd's LogsDirectory=moat).
inline constexpr const char* kSystemAudit = "/var/log/moat";

// /var/log/moat for a system moatd (serving other users on a socket, as root).
inline std::string audit(bool system_daemon) {
  return or_default(nonempty_env("MOAT_AUDIT_DIR"),
                    system_daemon ? kSystemAudit : state() + "/audit");
}

}  // namespace moat::dirs
