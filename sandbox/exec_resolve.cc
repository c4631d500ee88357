// sandbox/exec_resolve.cc: see exec_resolve.h.
//
// The sandbox's paths are resolved from its root with openat2(RESOLVE_IN_ROOT), which follows
// no magic link: the few paths that name one on purpose (/proc/self/exe, /proc/self/fd/N,
// /dev/fd/N, /dev/stdin) are recognised by name and opened through moatd's view of the
// caller's /proc entry, which is the same file. Any other path through a magic link (a
// symlink to /proc/self/exe) fails with the errno openat2 gives: refused, never guessed.
#include "sandbox/exec_resolve.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"
#include "policy/digest.h"
#include "sandbox/remote_memory.h"

namespace moat::sandbox {
namespace {

// The kernel's own: exec_binprm runs the binary handlers at depths 0 to 5, so a script may name
// a script four more times; the sixth interpreter fails with ELOOP.
constexpr int kMaxInterpreterDepth = 5;

// The largest program with no name on disk moat hashes for its record (a read of the whole
// file, on moatd's CPU); a larger one is refused rather than run unrecorded.
constexpr std::size_t kMaxUnnamedBytes = 256u << 20;

struct Shebang {
  std::string interpreter, argument;
};

// The #! line of an open file: the interpreter and its one optional argument, as the
// kernel splits them (binfmt_script).
Shebang shebang_of(int fd) {
  char head[256];
  ssize_t n = pread(fd, head, sizeof head - 1, 0);
  if (n < 3 || head[0] != '#' || head[1] != '!') return {};
  head[n] = '\0';
  std::string line(head + 2, static_cast<std::size_t>(n - 2));
  line = line.substr(0, line.find('\n'));
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::size_t b = 0;
  while (b < line.size() && blank(line[b])) ++b;
  std::size_t e = b;
  while (e < line.size() && !blank(line[e])) ++e;
  Shebang s{line.substr(b, e - b), ""};
  std::size_t a = e;
  while (a < line.size() && blank(line[a])) ++a;
  std::size_t z = line.size();
  while (z > a && blank(line[z - 1])) --z;
  s.argument = line.substr(a, z - a);
  // The kernel reads both as C strings: a NUL ends the interpreter's name (and then there is no
  // argument, the NUL being its separator) or the argument.
  if (const auto nul = s.interpreter.find('\0'); nul != std::string::npos) {
    s.interpreter.resize(nul);
    s.argument.clear();
  }
  s.argument = s.argument.substr(0, s.argument.find('\0'));
  return s;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// /proc/<tid>/<entry> for the names that mean the caller's own /proc entry; "" otherwise.
std::string own_proc_entry(const std::string& proc, std::string abs) {
  if (starts_with(abs, "/dev/fd/")) abs = "/proc/self/fd/" + abs.substr(8);
  if (abs == "/dev/stdin") abs = "/proc/self/fd/0";
  for (const char* self : {"/proc/self/", "/proc/thread-self/"}) {
    if (!starts_with(abs, self)) continue;
    const std::string rest = abs.substr(std::strlen(self));
    if (rest == "exe") return proc + "/exe";
    if (starts_with(rest, "fd/") && all_digits(rest.substr(3))) return proc + "/" + rest;
  }
  return "";
}

// Opens the file an exec names without the side effects of opening it: O_PATH first (read
// open of a FIFO would hold moatd until a writer comes, and of a terminal would make it moatd's
// controlling tty: moatd is a session leader without one, and the sandbox, holding the pty's
// master, could then send it SIGINT or SIGQUIT), then, for a regular file only, readable
// through that fd, O_NONBLOCK (a lease the sandbox holds fails the open instead of holding the
// watch for the lease-break time). Invalid with errno set when the name does not open;
// `*readable` says whether its #! line can be read.
UniqueFd open_exec_file(int dirfd, const char* path, std::uint64_t resolve, bool* readable) {
  *readable = false;
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = resolve;
  UniqueFd file(static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how)));
  struct stat st {};
  if (!file.valid() || fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) return file;
  UniqueFd contents(open(("/proc/self/fd/" + std::to_string(file.get())).c_str(),
                         O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!contents.valid()) return file;  // execute-only: the kernel may still run it
  *readable = true;
  return contents;
}

// Opens what the exec names; invalid with errno set, or with `refusal` set when moat cannot
// tell.
UniqueFd open_named(pid_t tid, int root, const std::string& path, int dirfd, bool empty_path,
                    Resolved& r, bool* readable) {
  const std::string proc = "/proc/" + std::to_string(tid);
  if (empty_path && path.empty())
    return open_exec_file(AT_FDCWD, (proc + "/fd/" + std::to_string(dirfd)).c_str(), 0, readable);
  std::string abs = path;
  if (path.empty() || path[0] != '/') {
    const std::string base_link =
        dirfd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(dirfd);
    const std::string base = dirfd == AT_FDCWD ? r.cwd : read_link(base_link);
    if (base.empty() || base[0] != '/' || base.find(" (deleted)") != std::string::npos) {
      // A directory whose path does not fit in PATH_MAX, or is gone: resolved from the
      // directory itself, as long as the path stays beneath it.
      UniqueFd dir(open(base_link.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!dir.valid()) return dir;
      UniqueFd fd = open_exec_file(dir.get(), path.c_str(), RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
                                   readable);
      if (!fd.valid() && errno == EXDEV)
        r.refusal =
            "its relative path leaves a working directory whose own path moat cannot "
            "read (longer than PATH_MAX, or deleted)";
      return fd;
    }
    abs = base + "/" + path;
  }
  if (const std::string own = own_proc_entry(proc, abs); !own.empty())
    return open_exec_file(AT_FDCWD, own.c_str(), 0, readable);
  return open_exec_file(root, abs.c_str(), RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, readable);
}

Resolved resolve_one(pid_t tid, int root, const std::string& path, int dirfd, bool empty_path,
                     const std::string& cwd, Shebang* shebang) {
  Resolved r;
  r.cwd = cwd;
  bool readable = false;
  UniqueFd file = open_named(tid, root, path, dirfd, empty_path, r, &readable);
  if (!file.valid()) {
    r.error = r.refusal.empty() ? errno : 0;
    return r;
  }
  struct stat st {};
  if (fstat(file.get(), &st) != 0) {
    r.error = errno;
    return r;
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
    r.error = EACCES;
    return r;
  }
  r.dev = r.image_dev = st.st_dev;
  r.ino = r.image_ino = st.st_ino;
  struct statvfs vfs {};
  r.read_only = fstatvfs(file.get(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0;
  r.exe = read_link("/proc/self/fd/" + std::to_string(file.get()));
  // No link left (st_nlink 0: shmem_file_setup clears it for a memfd, O_TMPFILE and unlink
  // leave none): the record names it by the bytes it holds.
  r.unnamed = st.st_nlink == 0;
  if (r.unnamed && readable) {
    auto digest = policy::sha256_file_hex("/proc/self/fd/" + std::to_string(file.get()),
                                          kMaxUnnamedBytes);
    if (digest) r.sha256 = std::move(*digest);
    else r.refusal = "it has no name on disk and moat cannot read its bytes for the record (" +
                     digest.error().message() + ")";
  }
  // Unreadable (execute-only, or a lease on it): moat cannot see a #! line the kernel would
  // follow. On a read-only mount nothing in the sandbox made it; anywhere else it is refused.
  if (!readable && !r.read_only)
    r.refusal =
        "moat cannot read its first line (it is execute-only, or leased), so it "
        "cannot tell which interpreter a #! line would run; make it readable";
  *shebang = shebang_of(file.get());  // O_PATH: pread fails, no interpreter named
  r.interpreter = shebang->interpreter;
  return r;
}

// The options of the dynamic loader run as a program (glibc's ld.so --help) that take a value.
bool loader_option_takes_value(const std::string& o) {
  for (const char* v : {"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0",
                        "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask"})
    if (o == v) return true;
  return false;
}

// The options that load code, and the variable each stands for (ld.so(8)); null for others.
const char* loader_option_variable(const std::string& o) {
  if (o == "--preload") return "LD_PRELOAD";
  if (o == "--audit") return "LD_AUDIT";
  if (o == "--library-path") return "LD_LIBRARY_PATH";
  return nullptr;
}

bool loader_flag(const std::string& o) {
  for (const char* f : {"--list", "--verify", "--inhibit-cache", "--list-tunables",
                        "--list-diagnostics", "--help", "--version"})
    if (o == f) return true;
  return false;
}

// The program `ld.so [OPTIONS] PROGRAM ARGS...` loads, judged as if it were exec'd.
void add_loaded_program(pid_t tid, int root, const std::vector<std::string>& argv, Resolved& r) {
  std::size_t i = 1;
  while (i < argv.size() && starts_with(argv[i], "--")) {
    if (loader_option_takes_value(argv[i])) {
      if (const char* var = loader_option_variable(argv[i]); var && i + 1 < argv.size())
        r.loader_options.push_back(LoaderInput{var, argv[i + 1], argv[i]});
      i += 2;
    } else if (loader_flag(argv[i])) {
      ++i;
    } else {
      r.refusal = "the dynamic loader is given an option moat does not know (" + argv[i] +
                  "): it cannot tell which program would be loaded";
      return;
    }
  }
  if (i >= argv.size()) return;  // --help, --version, --list-tunables: nothing loaded
  if (argv[i].find('/') == std::string::npos) {
    r.refusal = "the dynamic loader is asked to load a program by a bare name (" + argv[i] +
                "), which it looks up on its own search path: name it by a path";
    return;
  }
  Shebang unused;
  Resolved loaded = resolve_one(tid, root, argv[i], AT_FDCWD, false, r.cwd, &unused);
  if (loaded.error != 0 || !loaded.refusal.empty()) {
    r.refusal = "the program the dynamic loader is asked to load (" + argv[i] +
                ") does not open: " +
                (loaded.refusal.empty() ? std::strerror(loaded.error) : loaded.refusal);
    return;
  }
  r.also.push_back(
      ExecTarget{std::vector<std::string>(argv.begin() + static_cast<long>(i), argv.end()), argv[i],
                 loaded.exe, true, loaded.read_only, loaded.unnamed});
}

}  // namespace

std::string read_link(const std::string& path) {
  char buf[kMaxPath + 1];
  ssize_t n = readlink(path.c_str(), buf, kMaxPath);
  if (n < 0 || static_cast<std::size_t>(n) >= kMaxPath) return std::string();
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string absolute_path(const std::string& path, const std::string& cwd) {
  return !path.empty() && path[0] == '/' ? path : cwd + "/" + path;
}

bool is_dynamic_loader(const std::string& exe) {
  const std::string name = exe.substr(exe.rfind('/') + 1);
  return name == "ld.so" || starts_with(name, "ld.so.") ||
         (starts_with(name, "ld-") && name.find(".so") != std::string::npos);
}

Resolved resolve_exec(pid_t tid, int root, const std::string& path, int dirfd, bool empty_path,
                      const std::vector<std::string>& argv) {
  const std::string cwd = read_link("/proc/" + std::to_string(tid) + "/cwd");
  Shebang shebang;
  Resolved r = resolve_one(tid, root, path, dirfd, empty_path, cwd, &shebang);
  if (r.error != 0 || !r.refusal.empty()) return r;
  // The kernel runs INTERPRETER [ARGUMENT] PATH ARGV[1:], each interpreter possibly a script.
  std::vector<std::string> run_argv = argv;
  std::string named = path;
  for (int depth = 0; !shebang.interpreter.empty(); ++depth) {
    if (depth == kMaxInterpreterDepth) {
      r.error = ELOOP;  // the kernel's answer to a deeper chain
      return r;
    }
    std::vector<std::string> next{shebang.interpreter};
    if (!shebang.argument.empty()) next.push_back(shebang.argument);
    next.push_back(named);
    if (run_argv.size() > 1) next.insert(next.end(), run_argv.begin() + 1, run_argv.end());
    Shebang inner;
    Resolved interp = resolve_one(tid, root, shebang.interpreter, AT_FDCWD, false, cwd, &inner);
    if (interp.error != 0 || !interp.refusal.empty()) {
      r.error = interp.error;
      r.refusal = interp.refusal;
      return r;
    }
    r.also.push_back(
        ExecTarget{next, shebang.interpreter, interp.exe, false, false, interp.unnamed});
    r.image_dev = interp.dev;
    r.image_ino = interp.ino;
    named = shebang.interpreter;
    run_argv = std::move(next);
    shebang = inner;
  }
  const std::string& last = r.also.empty() ? r.exe : r.also.back().exe;
  if (is_dynamic_loader(last)) add_loaded_program(tid, root, r.also.empty() ? argv : run_argv, r);
  return r;
}

}  // namespace moat::sandbox
