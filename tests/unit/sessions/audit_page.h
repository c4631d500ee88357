// tests/unit/sessions/audit_page.h: an audit log's HTML page as headless Chromium sees it.
// Point it at any log (a synthetic one here, a real session's in the e2e tests).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sessions/audit_verify.h"
#include "sessions/render_audit.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions::testing {

struct AuditPage {
  std::string skipped;  // why Chromium could not be run ("" when it was)
  std::string html;     // the page as moat audit export --html writes it
  std::string dom;      // the DOM after the page's script ran
};

// Debian's `chromium` package ($MOAT_CHROMIUM overrides), or "".
inline std::string find_chromium() {
  const char* env = std::getenv("MOAT_CHROMIUM");
  if (env != nullptr && *env != '\0') return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// The DOM headless Chromium builds from `file` (with `fragment` as the URL's fragment), using
// `dir` for its profile; "" with `skipped` set when Chromium cannot be run.
inline std::string chromium_dom(const std::string& file, const std::string& dir,
                                const std::string& fragment, std::string* skipped) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    *skipped = "chromium is not installed (Debian: apt-get install chromium)";
    return "";
  }
  // --no-sandbox: the tests run as root or as an unprivileged uid without user namespaces;
  // the page is our own and file:// only. A profile of its own keeps runs independent.
  const std::string cmd = "timeout 120 '" + chromium +
                          "' --headless --no-sandbox --disable-gpu --user-data-dir='" + dir +
                          "/chromium-profile' --dump-dom 'file://" + file +
                          (fragment.empty() ? "" : "#" + fragment) + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *skipped = "popen failed";
    return "";
  }
  std::string dom;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) dom.append(buf, n);
  ::pclose(p);
  return dom;
}

// Renders `log_path` as `moat audit export --html --allow-open` does, writes it into `dir`,
// and dumps the DOM Chromium builds from it, with `fragment` (e.g. "program=curl") as the
// URL's fragment, which sets the page's filters.
inline AuditPage audit_page_dom(const std::string& log_path, const std::string& dir,
                                const std::string& fragment = "") {
  AuditPage page;
  auto records = load_audit_records(log_path);
  auto verdict = verify_audit_file(log_path, /*require_end=*/false);
  if (!records || !verdict) {
    page.skipped = "cannot read " + log_path;
    return page;
  }
  page.html = audit_html(*records, *verdict, log_path);
  const std::string file = dir + "/audit.html";
  spit(file, page.html);
  page.dom = chromium_dom(file, dir, fragment, &page.skipped);
  return page;
}

}  // namespace moat::sessions::testing
