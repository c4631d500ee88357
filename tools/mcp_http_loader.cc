// tools/mcp_http_loader.cc: http_transport for moatd: the libcurl transport is a module loaded
// at the first url server (see mcp_http_module.h).
#include <cstring>
#include <string>

#include "base/module_loader.h"
#include "tools/mcp_http_module.h"

namespace moat::tools::mcp {
namespace {

bool is_this_builds(const McpHttpModule* m) {
  return m != nullptr && std::strcmp(m->version, MOAT_VERSION) == 0 &&
         m->options_size == sizeof(HttpOptions) && m->limits_size == sizeof(ServerLimits);
}

Result<const McpHttpModule*> open_module() {
  return modules::open_module<McpHttpModule>(
      kMcpHttpModuleFile, MOAT_MCP_HTTP_MODULE_DIR, kMcpHttpModuleSymbol, is_this_builds,
      std::string("MCP HTTP transport module (") + kMcpHttpModuleFile +
          ", needed by a server declared with a url)");
}

}  // namespace

Result<std::unique_ptr<Transport>> http_transport(const std::string& server, HttpOptions options,
                                                  const ServerLimits& limits) {
  static const Result<const McpHttpModule*> loaded = open_module();  // once, thread-safe
  if (!loaded) return fail(Error::msg("mcp server " + server + ": " + loaded.error().message()));
  return (*loaded)->make(server, std::move(options), limits);
}

}  // namespace moat::tools::mcp
