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

inline std::string home() {
  const std::string h = absolute_env("HOME");
  return h.empty() ? "/" : h;
}

inline std::string config_home() {
  const std::string x = absolute_env("XDG_CONFIG_HOME");
  return x.empty() ? home() + "/.config" : x;
}

inline std::string state_home() {
  const std::string x = absolute_env("XDG_STATE_HOME");
  return x.empty() ? home() + "/.local/state" : x;
}

// $XDG_CONFIG_HOME/moat: config.toml (providers, where the API key is sent) and policy.d.
inline std::string config() { return config_home() + "/moat"; }
inline std::string config_file() { return config() + "/config.toml"; }

// $XDG_STATE_HOME/moat: sessions, audit logs and project trust pins by default.
inline std::string state() { return state_home() + "/moat"; }

inline constexpr const char* kSystemPolicy = "/etc/moat/policy.d";

inline std::string user_policy() { return config() + "/policy.d"; }

inline std::string trust() {
  const std::string d = nonempty_env("MOAT_TRUST_DIR");
  return d.empty() ? state() + "/trust" : d;
}

inline std::string sessions() {
  const std::string d = nonempty_env("MOAT_SESSIONS_DIR");
  return d.empty() ? state() + "/sessions" : d;
}

// /var/log/moat for a system moatd (serving other users on a socket, as root).
inline std::string audit(bool system_daemon) {
  const std::string d = nonempty_env("MOAT_AUDIT_DIR");
  if (!d.empty()) return d;
  return system_daemon ? "/var/log/moat" : state() + "/audit";
}

}  // namespace moat::dirs
