// sandbox/session_placeholders.cc: the session's placeholders at its end (see
// session_placeholders.h).
#include "sandbox/session_placeholders.h"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>

#include "base/log.h"
#include "sandbox/init_contract.h"

namespace moat::sandbox {

std::vector<Placeholder> drain_placeholders(int ctl) {
  std::vector<Placeholder> out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(ctl, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    if (auto p = parse_placeholder_message(std::string_view(buf, static_cast<std::size_t>(n))))
      out.push_back(std::move(*p));
  }
}

void remove_session_placeholders(std::vector<Placeholder> created, int workspace,
                                 const SessionConfig& config,
                                 const std::vector<UniqueFd>& bind_dirs) {
  std::vector<std::vector<Placeholder>> per_root(config.binds.size() + 1);
  for (Placeholder& p : created) {
    std::size_t root = 0, longest = 0;  // 0: the workspace; i + 1: bind i
    for (std::size_t i = 0; i < config.binds.size(); ++i) {
      const std::string& t = config.binds[i].target;
      if (t.size() > longest && p.relative.rfind(t + "/", 0) == 0) root = i + 1, longest = t.size();
    }
    if (root > 0) p.relative = p.relative.substr(longest + 1);
    if (root > 0 || p.relative.empty() || p.relative[0] != '/')
      per_root[root].push_back(std::move(p));
  }
  for (std::size_t r = 0; r < per_root.size(); ++r) {
    if (per_root[r].empty()) continue;
    const int dir = r == 0 ? workspace : bind_dirs[r - 1].get();
    const std::string& name = r == 0 ? config.workspace : config.binds[r - 1].source;
    if (auto removed = remove_placeholders(dir, name, std::move(per_root[r])); !removed)
      MOAT_LOG_WARN("session end: %s", removed.error().message().c_str());
  }
}

}  // namespace moat::sandbox
