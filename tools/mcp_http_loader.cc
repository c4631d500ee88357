// tools/mcp_http_loader.cc: http_transport for moatd: the libcurl transport is a module loaded
// at the first url server (see mcp_http_module.h).
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tools/mcp_http_module.h"

namespace moat::tools::mcp {
namespace {

// Next to the binary (the build tree, or an install that keeps both in one directory), then the
// install's library directory. Never a path from the environment: moatd may run as root.
std::vector<std::string> module_paths() {
  std::vector<std::string> out;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string exe(self, static_cast<std::size_t>(n));
    out.push_back(exe.substr(0, exe.rfind('/') + 1) + kMcpHttpModuleFile);
  }
  out.push_back(std::string(MOAT_MCP_HTTP_MODULE_DIR) + "/" + kMcpHttpModuleFile);
  return out;
}

bool is_this_builds(const McpHttpModule* m) {
  return m != nullptr && std::strcmp(m->version, MOAT_VERSION) == 0 &&
         m->options_size == sizeof(HttpOptions) && m->limits_size == sizeof(ServerLimits);
}

Result<const McpHttpModule*> open_module() {
  std::string tried;
  for (const std::string& path : module_paths()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + (why != nullptr ? std::string(why) : path + ": cannot be loaded");
      continue;
    }
    auto entry = reinterpret_cast<McpHttpModuleEntry>(::dlsym(handle, kMcpHttpModuleSymbol));
    const McpHttpModule* module = entry != nullptr ? entry() : nullptr;
    if (is_this_builds(module)) return module;
    tried += "\n  " + path + ": not this build's module (another version or layout)";
    ::dlclose(handle);
  }
  return fail("the MCP HTTP transport module (" + std::string(kMcpHttpModuleFile) +
              ", needed by a server declared with a url) could not be loaded:" + tried);
}

}  // namespace

Result<std::unique_ptr<Transport>> http_transport(const std::string& server, HttpOptions options,
                                                  const ServerLimits& limits) {
  static const Result<const McpHttpModule*> loaded = open_module();  // once, thread-safe
  if (!loaded) return fail(Error::msg("mcp server " + server + ": " + loaded.error().message()));
  return (*loaded)->make(server, std::move(options), limits);
}

}  // namespace moat::tools::mcp
