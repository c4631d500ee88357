// sandbox/session_pool_config.cc: SessionConfig's text for a pooled keeper (see
// session_pool_config.h). nlohmann's exceptions stay in this file.
#include "sandbox/session_pool_config.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "base/sys.h"
#include "sandbox/init_contract.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

json limits_json(const Limits& l) {
  return {{"wall_time_s", l.wall_time_s}, {"session_wall_time_s", l.session_wall_time_s},
          {"cpu_time_s", l.cpu_time_s},   {"memory_bytes", l.memory_bytes},
          {"pids", l.pids},               {"file_size", l.file_size},
          {"open_files", l.open_files},   {"tmp_size", l.tmp_size},
          {"output_bytes", l.output_bytes}};
}

Limits limits_from(const json& j) {
  Limits l;
  j.at("wall_time_s").get_to(l.wall_time_s);
  j.at("session_wall_time_s").get_to(l.session_wall_time_s);
  j.at("cpu_time_s").get_to(l.cpu_time_s);
  j.at("memory_bytes").get_to(l.memory_bytes);
  j.at("pids").get_to(l.pids);
  j.at("file_size").get_to(l.file_size);
  j.at("open_files").get_to(l.open_files);
  j.at("tmp_size").get_to(l.tmp_size);
  j.at("output_bytes").get_to(l.output_bytes);
  return l;
}

json bind_json(const SessionBind& b) {
  return {{"source", b.source},         {"target", b.target},
          {"writable", b.writable},     {"is_dir", b.is_dir},
          {"fd_is_tree", b.fd_is_tree}, {"hidden", b.hidden},
          {"protected_paths", b.protected_paths}};
}

SessionBind bind_from(const json& j) {
  SessionBind b;
  j.at("source").get_to(b.source);
  j.at("target").get_to(b.target);
  j.at("writable").get_to(b.writable);
  j.at("is_dir").get_to(b.is_dir);
  j.at("fd_is_tree").get_to(b.fd_is_tree);
  j.at("hidden").get_to(b.hidden);
  j.at("protected_paths").get_to(b.protected_paths);
  return b;
}

SessionConfig config_from(const json& j) {
  SessionConfig c;
  j.at("workspace").get_to(c.workspace);
  j.at("read_only").get_to(c.read_only);
  j.at("protected_paths").get_to(c.protected_paths);
  j.at("protected_if_present").get_to(c.protected_if_present);
  j.at("hidden_paths").get_to(c.hidden_paths);
  j.at("max_protect_walk_entries").get_to(c.max_protect_walk_entries);
  j.at("mask_linked_files").get_to(c.mask_linked_files);
  for (const json& b : j.at("binds")) c.binds.push_back(bind_from(b));
  j.at("network").get_to(c.network);
  j.at("net_proxy_port").get_to(c.net_proxy_port);
  c.limits = limits_from(j.at("limits"));
  j.at("env").get_to(c.env);
  j.at("home_gitconfig").get_to(c.home_gitconfig);
  j.at("hostname").get_to(c.hostname);
  j.at("unprivileged_uid").get_to(c.unprivileged_uid);
  j.at("unprivileged_gid").get_to(c.unprivileged_gid);
  j.at("allow_without").get_to(c.allow_without);
  j.at("test_skip_step").get_to(c.test_skip_step);
  j.at("test_delay_start_record_ms").get_to(c.test_delay_start_record_ms);
  return c;
}

}  // namespace

std::string session_config_text(const SessionConfig& c) {
  json binds = json::array();
  for (const SessionBind& b : c.binds) binds.push_back(bind_json(b));
  const json j = {{"workspace", c.workspace},
                  {"read_only", c.read_only},
                  {"protected_paths", c.protected_paths},
                  {"protected_if_present", c.protected_if_present},
                  {"hidden_paths", c.hidden_paths},
                  {"max_protect_walk_entries", c.max_protect_walk_entries},
                  {"mask_linked_files", c.mask_linked_files},
                  {"binds", std::move(binds)},
                  {"network", c.network},
                  {"net_proxy_port", c.net_proxy_port},
                  {"limits", limits_json(c.limits)},
                  {"env", c.env},
                  {"home_gitconfig", c.home_gitconfig},
                  {"hostname", c.hostname},
                  {"unprivileged_uid", c.unprivileged_uid},
                  {"unprivileged_gid", c.unprivileged_gid},
                  {"allow_without", c.allow_without},
                  {"test_skip_step", c.test_skip_step},
                  {"test_delay_start_record_ms", c.test_delay_start_record_ms}};
  // Paths need not be UTF-8: replaced bytes would bind another path than the one checked, so
  // a path that is not UTF-8 makes the dump throw, and the caller builds the session fresh.
  try {
    return j.dump();
  } catch (const json::exception&) {
    return {};
  }
}

Result<SessionConfig> session_config_from_text(std::string_view text) {
  try {
    return config_from(json::parse(text));
  } catch (const json::exception& e) {
    return fail(std::string("the session config: ") + e.what());
  }
}

Result<FinishRecord> receive_finish(int ctl, const SessionConfig& pooled) {
  std::string buf(kMaxFinishBytes, '\0');
  UniqueFd fds[kMaxFinishFds];
  std::size_t nfds = 0;
  MOAT_ASSIGN_OR_RETURN(std::size_t n,
                        sys::recv_with_fds(ctl, buf.data(), buf.size(), fds, kMaxFinishFds, &nfds));
  // kFinish, then '1' when a tree follows the workspace among the fds ('0': the keeper clones).
  if (n < 2 || buf[0] != ctl_byte(CtlMsg::kFinish) || nfds < 1)
    return fail("pool: kFinish: expected the record and at least the workspace's fd");
  const std::size_t first_bind = buf[1] == '1' ? 2 : 1;
  FinishRecord out;
  auto decoded = session_config_from_text(std::string_view(buf).substr(2, n - 2));
  if (!decoded) return fail("pool: " + decoded.error().message());
  out.config = std::move(*decoded);
  out.config.handler = pooled.handler;
  if (nfds != first_bind + out.config.binds.size())
    return fail("pool: kFinish: the fds do not match the config's binds");
  out.workspace = std::move(fds[0]);
  if (first_bind == 2) out.tree = std::move(fds[1]);
  for (std::size_t i = 0; i < out.config.binds.size(); ++i)
    out.config.binds[i].fd = fds[first_bind + i].release();
  return out;
}

}  // namespace moat::sandbox
