// tools/mcp_http_module.h: what the MCP HTTP transport module exports to moatd, which loads it
// at its first url server (mcp_http_loader.cc). libcurl brings some 30 shared libraries (about
// 4.5 ms at every process start, measured with LD_PRELOAD on /bin/true) that only a url server
// needs; moatd and the `moat` binary (which links moatd's library) start without them, as the
// model providers' transport does (agent/providers/http_stream.h, issue 15). The unit tests
// link mcp_http.cc directly (mcp_http_dep).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tools/mcp_http.h"

namespace moat::tools::mcp {

inline constexpr char kMcpHttpModuleFile[] = "libmoat_mcp_http.so";
inline constexpr char kMcpHttpModuleSymbol[] = "moat_mcp_http_module";

// The module and moatd hand C++ objects to each other, so both must come from one build: the
// version and the sizes refuse a module left behind by another one.
struct McpHttpModule {
  const char* version;       // MOAT_VERSION
  std::size_t options_size;  // sizeof(HttpOptions)
  std::size_t limits_size;   // sizeof(ServerLimits)
  Result<std::unique_ptr<Transport>> (*make)(const std::string&, HttpOptions,
                                             const ServerLimits&);
};
using McpHttpModuleEntry = const McpHttpModule* (*)();

}  // namespace moat::tools::mcp
