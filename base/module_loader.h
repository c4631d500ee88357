// base/module_loader.h: a part of moat built as a module of its own (a library that only some
// runs need, such as the libcurl transports: linking it would add its start-up cost to every
// process), loaded on first use from beside the running binary or from the install's library
// directory. Never from a path the environment names: the loader runs in moatd (maybe root) and
// in the process that holds the API key.
#pragma once

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace moat::modules {

// Where `file` is looked for, in order: this binary's directory, then `install_dir`.
inline std::vector<std::string> module_paths(const std::string& file,
                                             const std::string& install_dir) {
  std::vector<std::string> out;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string exe(self, static_cast<std::size_t>(n));
    out.push_back(exe.substr(0, exe.rfind('/') + 1) + file);
  }
  out.push_back(install_dir + "/" + file);
  return out;
}

// Opens the first of module_paths() whose entry point `symbol` (a function returning
// `const Module*`) gives a table `is_this_builds` accepts (same version and layout); the error
// says what `needed_by` needed and why each path was passed over.
template <class Module>
Result<const Module*> open_module(const std::string& file, const std::string& install_dir,
                                  const char* symbol, bool (*is_this_builds)(const Module*),
                                  const std::string& needed_by) {
  using Entry = const Module* (*)();
  std::string tried;
  for (const std::string& path : module_paths(file, install_dir)) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + (why != nullptr ? std::string(why) : path + ": cannot be loaded");
      continue;
    }
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, symbol));
    const Module* module = entry != nullptr ? entry() : nullptr;
    if (is_this_builds(module)) return module;
    tried += "\n  " + path + ": not this build's module (another version or layout)";
    ::dlclose(handle);
  }
  return fail("the " + needed_by + " could not be loaded:" + tried);
}

}  // namespace moat::modules
