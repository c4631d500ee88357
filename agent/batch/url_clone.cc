// agent/batch/url_clone.cc: url repos as a checklist: the policy allows the host (before the
// batch starts), one sandboxed clone per url and OUT (locked, cached), a bundle on the
// sandbox's stdout, and the environment host git reads the remote's files with.
#include "agent/batch/url_clone.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "agent/batch/preflight.h"
#include "agent/batch/process.h"
#include "agent/batch/repo_url.h"
#include "base/sys.h"
#include "policy/digest.h"
#include "policy/policy.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;

// A clone larger than an hour's transfer is better made by hand and given as a path.
constexpr int kCloneTimeoutS = 3600;

// Run by sh in the sandbox with the url as $1. git speaks HTTP(S) only (a redirect to another
// protocol is refused) and reaches the host through the proxy variables moatd sets; the
// repository it makes stays in the sandbox's workspace, and only the bundle of its branches
// and tags leaves, on stdout.
constexpr const char* kCloneScript =
    "set -e\n"
    "git -c protocol.allow=never -c protocol.https.allow=always -c protocol.http.allow=always "
    "clone --bare --quiet -- \"$1\" repo.git\n"
    "git -C repo.git bundle create --quiet - --all\n";

Failure host_refused(const Item& item, const RepoUrl& url, const policy::Decision& d) {
  const std::string port = std::to_string(url.port);
  return fail("repo \"" + item.id + "\" (manifest line " + std::to_string(item.line) + "): url " +
              url.text + ": the policy " +
              (d.headless_downgraded ? "asks before" : "does not allow") + " connections to " +
              url.host + ":" + port + " (decided by " + rule_text(d.deciding) +
              (d.headless_downgraded ? ", and a batch cannot ask" : "") +
              "), so moatd's proxy would refuse the clone. Allow it in a user or system policy "
              "layer (a --policy file or the manifest's policy can only narrow), e.g. a file "
              "$XDG_CONFIG_HOME/moat/policy.d/git-hosts.toml holding:\n  schema = 1\n  "
              "[[network]]\n  id = "
              "\"user.git-host\"\n  decision = \"allow\"\n  domains = [\"" +
              url.host + "\"]\n  ports = [" + port + "]\n(see docs/batch.md, \"url repos\")");
}

std::string clone_key(const std::string& url) { return policy::sha256_hex(url).substr(0, 16); }

Result<void> make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Error::from_errno("mkdir", ec.value(), dir));
  return {};
}

std::vector<std::string> clone_argv(const std::string& url, const BatchEnv& env,
                                    const std::string& dir) {
  std::vector<std::string> a = {env.moat_bin,
                                "sandbox",
                                "exec",
                                "--permissive",
                                "--network",
                                "-C",
                                dir + "/ws",
                                "--audit-dir",
                                dir + "/audit",
                                "--timeout",
                                std::to_string(kCloneTimeoutS),
                                "--setenv",
                                "GIT_TERMINAL_PROMPT",
                                "0"};
  for (const auto& f : env.policy_files) a.insert(a.end(), {"--policy", f});
  a.insert(a.end(), {"--", "sh", "-c", kCloneScript, "sh", url});
  return a;
}

// The clone's log, for the item's reason.
std::string read_log(const std::string& path) {
  auto fd = sys::open_path(path, O_RDONLY);
  if (!fd) return "";
  auto text = sys::read_to_end(fd->get());
  return text ? *text : "";
}

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

// Why a clone failed, when a limit of the sandbox's is the likely cause: the policy's limits
// apply to the clone as to any call.
std::string limit_hint(const Finished& f, const std::string& log) {
  constexpr int kSigXfsz = 25;  // the file-size limit (RLIMIT_FSIZE)
  if (f.exit_code == 128 + kSigXfsz || log.find("signal 25") != std::string::npos)
    return "; a file of the clone outgrew the policy's resources.file_size";
  if (f.exit_code == 124 || f.timed_out)
    return "; the clone outlasted the policy's resources.wall_time (or moat's hour)";
  return "";
}

// Clones in the sandbox into dir/ws, the bundle into dir/repo.bundle.tmp, then renames it.
Result<void> clone_in_sandbox(const std::string& url, const BatchEnv& env, const std::string& dir) {
  const std::string ws = dir + "/ws", tmp = dir + "/repo.bundle.tmp", log = dir + "/clone.log";
  std::error_code ec;
  fs::remove_all(ws, ec);  // what a killed earlier run left
  MOAT_TRY(make_dirs(ws));
  auto done = run_process({clone_argv(url, env, dir), tmp, log, kCloneTimeoutS + 30, {}});
  fs::remove_all(ws, ec);
  if (!done) return fail(done.error());
  if (!done->ok()) {
    fs::remove(tmp, ec);
    const std::string text = read_log(log);
    return fail(
        "cloning " + url + " in the sandbox failed (" +
        (done->timed_out ? std::string("timed out") : "exit " + std::to_string(done->exit_code)) +
        "): " + last_line(text) + limit_hint(*done, text) + " (the clone's log: " + log + ")");
  }
  MOAT_ASSIGN_OR_RETURN(UniqueFd f, sys::open_path(tmp, O_RDONLY));
  if (::fsync(f.get()) != 0) return fail(Error::from_errno("fsync", errno, tmp));
  fs::rename(tmp, dir + "/repo.bundle", ec);
  if (ec) return fail(Error::from_errno("rename", ec.value(), tmp));
  return {};
}

}  // namespace

Result<std::int64_t> check_urls_allowed(const std::vector<const Item*>& items,
                                        const std::vector<std::string>& policy_files,
                                        const std::string& scratch_dir) {
  bool any = false;
  for (const Item* i : items) any = any || !i->url.empty();
  if (!any) return 0;
  // The layers the clone's private moatd loads: its defaults (moat batch passes none but the
  // manifest's files), and no project layer (its workspace is a fresh folder).
  auto p = load_batch_policy(policy_files, scratch_dir);
  if (!p) return fail(p.error().with_context("loading the policy the url repos are cloned under"));
  for (const Item* i : items) {
    if (i->url.empty()) continue;
    MOAT_ASSIGN_OR_RETURN(RepoUrl url, parse_repo_url(i->url));
    const policy::Decision d = (*p)->decide_network(url.host, url.port);
    if (d.verdict != policy::Verdict::kAllow) return host_refused(*i, url, d);
  }
  return (*p)->resources().network_bytes;
}

Result<void> url_checkout_fits(const std::string& git_dir, std::int64_t max_bytes) {
  // awk reads ls-tree's "MODE TYPE OBJECT SIZE\tPATH" lines and stops it (SIGPIPE) when over.
  const std::string script =
      "git --git-dir=\"$1\" ls-tree -r -l --full-tree HEAD | awk -v max=\"$2\" -v most=\"$3\" "
      "'$2 == \"blob\" { s += $4 } { n++ } s > max || n > most { print \"over\", s, n; exit } "
      "END { if (s <= max && n <= most) print \"ok\", s + 0, n + 0 }'";
  MOAT_ASSIGN_OR_RETURN(std::string said, process_output({"sh", "-c", script, "sh", git_dir,
                                                          std::to_string(max_bytes),
                                                          std::to_string(kMaxCheckoutEntries)},
                                                         isolated_git_env()));
  if (said.rfind("ok ", 0) == 0) return {};
  return fail("the checkout would hold more than " + std::to_string(max_bytes) +
              " bytes (the policy's resources.network_bytes) or " +
              std::to_string(kMaxCheckoutEntries) + " files (counted so far: " + said.substr(5) +
              " bytes and files): a repository that large is cloned by hand and given as path");
}

const std::vector<std::pair<std::string, std::string>>& isolated_git_env() {
  static const std::vector<std::pair<std::string, std::string>> env = {
      {"GIT_CONFIG_NOSYSTEM", "1"},
      {"GIT_CONFIG_GLOBAL", "/dev/null"},
      {"GIT_CONFIG_COUNT", "0"},  // nor configuration in this process's environment
      {"GIT_CONFIG_PARAMETERS", ""},
      {"GIT_TERMINAL_PROMPT", "0"},
      {"GIT_TEMPLATE_DIR", ""},  // no hooks or files copied into moat's copies
  };
  return env;
}

Result<UrlBundle> fetch_url_bundle(const std::string& url, const BatchEnv& env) {
  UrlBundle b;
  b.dir = (fs::path(env.out_dir) / "clones" / clone_key(url)).string();
  b.path = b.dir + "/repo.bundle";
  MOAT_TRY(make_dirs(b.dir));
  // Held until this returns: an item with the same url waits here, then finds the bundle.
  MOAT_ASSIGN_OR_RETURN(UniqueFd lock,
                        sys::open_path(b.dir + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (::flock(lock.get(), LOCK_EX) != 0) return fail(Error::from_errno("flock", errno, b.dir));
  std::error_code ec;
  b.cached = fs::is_regular_file(fs::symlink_status(b.path, ec));
  if (!b.cached) MOAT_TRY(clone_in_sandbox(url, env, b.dir));
  return b;
}

}  // namespace moat::agent::batch
