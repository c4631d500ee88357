// agent/providers/http_module_loader.cc: http_post_stream for the `moat` binary: the libcurl
// transport is a module loaded on first use (see http_stream.h).
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/providers/http_module.h"

namespace moat::agent::providers {
namespace {

// Next to the binary (the build tree, or an install that keeps both in one directory), then the
// install's library directory. Never a path from the environment: the module runs in the
// process that holds the API key.
std::vector<std::string> module_paths() {
  std::vector<std::string> out;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string exe(self, static_cast<std::size_t>(n));
    out.push_back(exe.substr(0, exe.rfind('/') + 1) + kHttpModuleFile);
  }
  out.push_back(std::string(MOAT_HTTP_MODULE_DIR) + "/" + kHttpModuleFile);
  return out;
}

bool is_this_builds(const HttpModule* m) {
  return m != nullptr && std::strcmp(m->version, MOAT_VERSION) == 0 &&
         m->request_size == sizeof(HttpRequest) && m->outcome_size == sizeof(HttpOutcome);
}

Result<const HttpModule*> open_module() {
  std::string tried;
  for (const std::string& path : module_paths()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + (why != nullptr ? std::string(why) : path + ": cannot be loaded");
      continue;
    }
    auto entry = reinterpret_cast<HttpModuleEntry>(::dlsym(handle, kHttpModuleSymbol));
    const HttpModule* module = entry != nullptr ? entry() : nullptr;
    if (is_this_builds(module)) return module;
    tried += "\n  " + path + ": not this build's module (another version or layout)";
    ::dlclose(handle);
  }
  return fail("the HTTP transport module (" + std::string(kHttpModuleFile) +
              ", needed by HTTP model providers) could not be loaded:" + tried);
}

const Result<const HttpModule*>& loaded_module() {
  static const Result<const HttpModule*> loaded = open_module();  // once, thread-safe
  return loaded;
}

}  // namespace

Result<void> load_http_transport() {
  if (const auto& m = loaded_module(); !m) return fail(m.error());
  return {};
}

HttpOutcome http_post_stream(const HttpRequest& request,
                             const std::function<bool(std::string_view)>& on_body) {
  const auto& m = loaded_module();
  if (m) return (*m)->post_stream(request, on_body);
  HttpOutcome out;
  out.transport = Transport::kConnectFailed;
  out.detail = m.error().message();
  return out;
}

}  // namespace moat::agent::providers
