// agent/providers/http_module_entry.cc: the HTTP transport module's one export (http_module.h).
// The module is built with hidden visibility: only this symbol is seen by the loader.
#include "agent/providers/http_module.h"

extern "C" __attribute__((visibility("default"))) const moat::agent::providers::HttpModule*
moat_http_module() {
  using namespace moat::agent::providers;
  static const HttpModule kModule{MOAT_VERSION, sizeof(HttpRequest), sizeof(HttpOutcome),
                                  &http_post_stream};
  return &kModule;
}
