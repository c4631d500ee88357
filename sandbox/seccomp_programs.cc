// sandbox/seccomp_programs.cc: installing the programs built with moat (seccomp_programs.h; the
// programs themselves are the generated seccomp_programs_embedded.cc). No libseccomp here: moatd
// links none of it.
#include "sandbox/seccomp_programs.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace moat::sandbox {
namespace {

sock_fprog as_fprog(const BpfProgram& program) {
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program.insns.size());
  prog.filter = const_cast<sock_filter*>(program.insns.data());  // the kernel only reads it
  return prog;
}

}  // namespace

int install_exec_watch_in_child(const BpfProgram& program) {
  sock_fprog prog = as_fprog(program);
  // The listener is close-on-exec (the kernel opens it O_CLOEXEC); the worker passes it to
  // moatd and closes it before exec all the same.
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

int install_filter_in_child(const BpfProgram& program) {
  sock_fprog prog = as_fprog(program);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
  return 0;
}

}  // namespace moat::sandbox
