// agent/providers/http_module_loader.cc: http_post_stream for the `moat` binary: the libcurl
// transport is a module loaded on first use (see http_stream.h).
#include <cstring>
#include <string>

#include "agent/providers/http_module.h"
#include "base/module_loader.h"

namespace moat::agent::providers {
namespace {

bool is_this_builds(const HttpModule* m) {
  return m != nullptr && std::strcmp(m->version, MOAT_VERSION) == 0 &&
         m->request_size == sizeof(HttpRequest) && m->outcome_size == sizeof(HttpOutcome);
}

Result<const HttpModule*> open_module() {
  return modules::open_module<HttpModule>(kHttpModuleFile, MOAT_HTTP_MODULE_DIR, kHttpModuleSymbol,
                                          is_this_builds,
                                          std::string("HTTP transport module (") + kHttpModuleFile +
                                              ", needed by HTTP model providers)");
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
