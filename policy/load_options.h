// policy/load_options.h: where Policy::load finds its layers and what it assumes about the
// sandbox; below policy.h and layer.h, which both take it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace moat::policy {

// Where to find the layers; every directory can be overridden so tests never touch /etc.
struct LoadOptions {
  std::string system_dir = "/etc/moat/policy.d";  // root-owned; a parse error is fatal
  std::string user_dir;                           // default $XDG_CONFIG_HOME/moat/policy.d
  std::string workspace;       // project layer: <workspace>/.moat/policy.toml, if trusted
  std::string trust_dir;       // where trust pins live; default $XDG_STATE_HOME/moat/trust
  bool trust_project = false;  // the person accepted the project layer's current hash
  bool headless = true;        // ask => deny
  std::vector<std::string> extra_files;  // --policy FILE: a narrowing CLI layer
  bool use_builtin_default = true;       // the shipped default policy as the base layer
                                         // (only when the system layer has no files)
  std::string home;                      // expands ~ and $HOME; default $HOME
  // Where bare program names are looked up; default: the host PATH restricted to the
  // read-only system trees the sandbox binds (/usr, /bin, /sbin, /lib, /etc).
  std::vector<std::string> search_path;
  // Files here can be planted by sandboxed code, so no allow rule matches a program in
  // them; default writable_roots(workspace) (policy/writable_roots.h).
  std::vector<std::string> writable_roots;
  // Added to writable_roots (or its default): moat sandbox exec's --bind targets.
  std::vector<std::string> extra_writable_roots;
  std::map<std::string, std::string> path_vars;  // $NAME in path patterns (AUDIT_DIR, ...)
};

}  // namespace moat::policy
