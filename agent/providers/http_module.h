// agent/providers/http_module.h: what the HTTP transport module exports to the `moat` binary
// that loads it (http_module_loader.cc); see http_stream.h for why it is a module.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "agent/providers/http_stream.h"

namespace moat::agent::providers {

inline constexpr char kHttpModuleFile[] = "libmoat_http.so";
inline constexpr char kHttpModuleSymbol[] = "moat_http_module";

// The module and the binary hand C++ objects to each other, so both must come from one build:
// the version and the sizes refuse a module left behind by another one.
struct HttpModule {
  const char* version;       // MOAT_VERSION
  std::size_t request_size;  // sizeof(HttpRequest)
  std::size_t outcome_size;  // sizeof(HttpOutcome)
  HttpOutcome (*post_stream)(const HttpRequest&, const std::function<bool(std::string_view)>&);
};
using HttpModuleEntry = const HttpModule* (*)();

}  // namespace moat::agent::providers
