// tools/mcp_http_module_entry.cc: the MCP HTTP transport module's one export
// (mcp_http_module.h). The module is built with hidden visibility: only this symbol is seen.
#include "tools/mcp_http_module.h"

extern "C" __attribute__((visibility("default"))) const moat::tools::mcp::McpHttpModule*
moat_mcp_http_module() {
  using namespace moat::tools::mcp;
  static const McpHttpModule kModule{MOAT_VERSION, sizeof(HttpOptions), sizeof(ServerLimits),
                                     &http_transport};
  return &kModule;
}
