// sandbox/exec_resolve.h: the file an exec names, opened as the kernel will open it, in the
// sandbox's view; and the programs that file makes the kernel run besides itself (a #!
// script's interpreter, the program the dynamic loader is asked to load), so that each is
// judged by the policy like any other exec.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace moat::sandbox {

// One program an exec runs: the one it names, or one that one brings in.
struct ExecTarget {
  std::vector<std::string> argv;
  std::string path;  // as named (execve's path, the #! line, the loader's argument)
  std::string exe;   // the file, resolved in the sandbox's view
  // Opened by the dynamic loader once it runs (not by the kernel during the exec), long after
  // moat's check; and whether that file is on a read-only mount.
  bool loaded = false;
  bool read_only = false;
  bool unnamed = false;  // no name on disk (see Resolved::unnamed)
};

// What makes the dynamic loader load code into a program besides its own libraries: a variable
// of the new environment (policy/code_env.h's exec-time rows), or an option given to the loader
// run as a program, named by the variable it stands for ("--preload" is LD_PRELOAD).
struct LoaderInput {
  std::string name;   // the variable: "LD_PRELOAD"
  std::string value;
  std::string given;  // how: "environment", or the option ("--preload")
};

struct Resolved {
  int error = 0;        // the errno the exec fails with when the file does not open
  std::string refusal;  // why moat refuses it without asking the policy ("" when it does not)
  std::string exe, cwd, interpreter;
  dev_t dev = 0;
  ino_t ino = 0;
  // The file /proc/<pid>/exe names once the exec is done: a #! script's (last) interpreter,
  // else the file itself.
  dev_t image_dev = 0;
  ino_t image_ino = 0;
  bool read_only = false;  // on a read-only mount: nothing in the sandbox can replace it
  // No name on disk (a memfd, an O_TMPFILE or deleted file: no link left): whatever its path
  // says, the sandbox made or kept it, and it is judged as a program in a writable root.
  bool unnamed = false;
  std::string sha256;  // of an unnamed file's bytes as moat read them ("" otherwise)
  // The dynamic loader's options that load code (--preload, --audit, --library-path), when the
  // exec runs the loader as a program.
  std::vector<LoaderInput> loader_options;
  // What the kernel runs besides the named file: #! interpreters (nested ones too) and, for
  // the dynamic loader run as a program, the program it loads.
  std::vector<ExecTarget> also;
};

// Resolves what `tid` (a host thread id, stopped in execve or execveat) names: `path` from its
// working directory, or from its directory fd `dirfd` (execveat), inside the sandbox's root
// `root` (an O_PATH fd of /proc/<pid>/root: every process of a session has the same one).
// `argv` is the exec's, for the programs brought in.
Resolved resolve_exec(pid_t tid, int root, const std::string& path, int dirfd, bool empty_path,
                      const std::vector<std::string>& argv);

// readlink(2), "" when it fails or the target does not fit in PATH_MAX.
std::string read_link(const std::string& path);

std::string absolute_path(const std::string& path, const std::string& cwd);

// True for the dynamic loader (ld-linux-x86-64.so.2, ld.so, ...), by its file name.
bool is_dynamic_loader(const std::string& exe);

}  // namespace moat::sandbox
