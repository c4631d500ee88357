// sandbox/seccomp_sets.cc: the seccomp table (see seccomp_sets.h). Chromium's shape: named
// sets, a reason on each deny entry, and errnos chosen so programs degrade instead of crash.
#include "sandbox/seccomp_sets.h"

#include <cerrno>

namespace moat::sandbox {
namespace {

// Tables are laid out by hand, one row per line.
// clang-format off
constexpr SyscallEntry kFiles[] = {
    {"read", ""}, {"write", ""}, {"close", ""},
    {"close_range", ""}, {"stat", ""}, {"fstat", ""}, {"lstat", ""},
    {"newfstatat", ""}, {"statx", ""}, {"statfs", ""}, {"fstatfs", ""}, {"lseek", ""},
    {"pread64", ""}, {"pwrite64", ""}, {"readv", ""}, {"writev", ""}, {"preadv", ""},
    {"pwritev", ""}, {"preadv2", ""}, {"pwritev2", ""}, {"access", ""}, {"faccessat", ""},
    {"faccessat2", ""}, {"pipe", ""}, {"pipe2", ""}, {"dup", ""}, {"dup2", ""}, {"dup3", ""},
    {"fcntl", ""}, {"flock", ""}, {"fsync", ""}, {"fdatasync", ""}, {"sync", ""},
    {"syncfs", ""}, {"sync_file_range", ""}, {"truncate", ""}, {"ftruncate", ""},
    {"getdents", ""}, {"getdents64", ""}, {"getcwd", ""}, {"chdir", ""},
    {"fchdir", ""}, {"rename", ""}, {"renameat", ""}, {"renameat2", ""}, 
    {"rmdir", ""}, {"link", ""}, {"linkat", ""}, {"unlink", ""},
    {"unlinkat", ""}, {"symlink", ""}, {"symlinkat", ""}, {"readlink", ""},
    {"readlinkat", ""}, {"chown", ""},
    {"fchown", ""}, {"lchown", ""}, {"fchownat", ""}, {"umask", ""}, {"utime", ""},
    {"utimes", ""}, {"utimensat", ""}, {"futimesat", ""},
    {"sendfile", ""}, {"splice", ""}, {"tee", ""}, {"vmsplice", ""},
    {"copy_file_range", ""}, {"readahead", ""}, {"fadvise64", ""}, {"getxattr", ""},
    {"lgetxattr", ""}, {"fgetxattr", ""}, {"listxattr", ""}, {"llistxattr", ""},
    {"flistxattr", ""}, {"setxattr", "security.* and trusted.* need capabilities we dropped"},
    {"lsetxattr", ""}, {"fsetxattr", ""}, {"removexattr", ""}, {"lremovexattr", ""},
    {"fremovexattr", ""}, {"inotify_init", ""}, {"inotify_init1", ""},
    {"inotify_add_watch", ""}, {"inotify_rm_watch", ""},
    {"memfd_create", ""}, {"ioprio_get", ""}, {"ioprio_set", ""},
};

constexpr SyscallEntry kMemory[] = {
    {"brk", ""}, {"mmap", ""}, {"mprotect", ""}, {"munmap", ""}, {"mremap", ""},
    {"msync", ""}, {"mincore", ""}, {"madvise", ""}, {"mlock", "bounded by RLIMIT_MEMLOCK"},
    {"mlock2", ""}, {"munlock", ""}, {"mlockall", ""}, {"munlockall", ""},
    {"remap_file_pages", ""}, {"membarrier", ""}, {"pkey_mprotect", ""}, {"pkey_alloc", ""},
    {"pkey_free", ""}, {"memfd_secret", ""}, {"get_mempolicy", ""}, {"set_mempolicy", ""},
    {"set_mempolicy_home_node", ""}, {"mbind", ""},
};

constexpr SyscallEntry kProcess[] = {
    {"fork", ""}, {"vfork", ""}, {"execve", ""}, {"execveat", ""}, {"exit", ""},
    {"exit_group", ""}, {"wait4", ""}, {"waitid", ""},
    {"kill", "the pid namespace and Landlock's signal scope bound who can be reached"},
    {"tkill", ""}, {"tgkill", ""}, {"getpid", ""}, {"gettid", ""}, {"getppid", ""},
    {"getpgrp", ""}, {"setpgid", ""}, {"getpgid", ""},
    {"setsid", "a new session only detaches from the worker's group, inside the pid namespace"},
    {"getsid", ""}, {"getuid", ""}, {"geteuid", ""}, {"getgid", ""}, {"getegid", ""},
    {"getresuid", ""}, {"getresgid", ""}, {"getgroups", ""},
    {"setuid", "only ids mapped in the session's user namespace exist"}, {"setgid", ""},
    {"setreuid", ""}, {"setregid", ""}, {"setresuid", ""}, {"setresgid", ""},
    {"setfsuid", ""}, {"setfsgid", ""}, {"setgroups", "setgroups is denied in the user namespace"},
    {"capget", ""}, {"capset", "can only lower: the bounding set is empty"},
    {"prctl", ""}, {"arch_prctl", ""}, {"set_tid_address", ""}, {"set_robust_list", ""},
    {"get_robust_list", ""}, {"rseq", ""}, {"futex", ""}, {"futex_waitv", ""},
    {"set_thread_area", ""}, {"get_thread_area", ""}, {"getpriority", ""},
    {"setpriority", ""}, {"sched_setparam", ""}, {"sched_getparam", ""},
    {"sched_setscheduler", ""}, {"sched_getscheduler", ""}, {"sched_get_priority_max", ""},
    {"sched_get_priority_min", ""}, {"sched_rr_get_interval", ""}, {"sched_setaffinity", ""},
    {"sched_getaffinity", ""}, {"sched_setattr", ""}, {"sched_getattr", ""},
    {"sched_yield", ""}, {"getrlimit", ""}, {"setrlimit", "can only lower hard limits"},
    {"prlimit64", ""}, {"getrusage", ""}, {"times", ""}, {"sysinfo", ""}, {"uname", ""},
    {"getcpu", ""}, {"restart_syscall", ""},
    {"landlock_create_ruleset", "a nested domain can only narrow"},
    {"landlock_add_rule", ""}, {"landlock_restrict_self", ""}, {"pidfd_open", ""},
    {"pidfd_send_signal", ""}, {"getrandom", ""},
};

constexpr SyscallEntry kSignalsTime[] = {
    {"rt_sigaction", ""}, {"rt_sigprocmask", ""}, {"rt_sigreturn", ""}, {"rt_sigpending", ""},
    {"rt_sigtimedwait", ""}, {"rt_sigqueueinfo", ""}, {"rt_tgsigqueueinfo", ""},
    {"rt_sigsuspend", ""}, {"sigaltstack", ""}, {"pause", ""}, {"alarm", ""},
    {"getitimer", ""}, {"setitimer", ""}, {"signalfd", ""}, {"signalfd4", ""},
    {"nanosleep", ""}, {"clock_nanosleep", ""}, {"clock_gettime", ""}, {"clock_getres", ""},
    {"gettimeofday", ""}, {"time", ""}, {"timer_create", ""}, {"timer_settime", ""},
    {"timer_gettime", ""}, {"timer_getoverrun", ""}, {"timer_delete", ""},
    {"timerfd_create", ""}, {"timerfd_settime", ""}, {"timerfd_gettime", ""}, {"poll", ""},
    {"ppoll", ""}, {"select", ""}, {"pselect6", ""}, {"epoll_create", ""},
    {"epoll_create1", ""}, {"epoll_ctl", ""}, {"epoll_wait", ""}, {"epoll_pwait", ""},
    {"epoll_pwait2", ""}, {"eventfd", ""}, {"eventfd2", ""},
};

constexpr SyscallEntry kSocketsIpc[] = {
    {"connect", "reachable peers are bounded by the net namespace and the family check"},
    {"accept", ""}, {"accept4", ""}, {"sendto", ""}, {"recvfrom", ""}, {"sendmsg", ""},
    {"recvmsg", ""}, {"sendmmsg", ""}, {"recvmmsg", ""}, {"shutdown", ""}, {"bind", ""},
    {"listen", ""}, {"getsockname", ""}, {"getpeername", ""}, {"setsockopt", ""},
    {"getsockopt", ""}, {"shmget", "System V IPC lives in the session's own ipc namespace"},
    {"shmat", ""}, {"shmctl", ""}, {"shmdt", ""}, {"semget", ""}, {"semop", ""},
    {"semctl", ""}, {"semtimedop", ""}, {"msgget", ""}, {"msgsnd", ""}, {"msgrcv", ""},
    {"msgctl", ""}, {"mq_open", ""}, {"mq_unlink", ""}, {"mq_timedsend", ""},
    {"mq_timedreceive", ""}, {"mq_notify", ""}, {"mq_getsetattr", ""},
    {"io_setup", "legacy AIO: old, small, used by databases; io_uring is the risky one"},
    {"io_destroy", ""}, {"io_getevents", ""}, {"io_submit", ""}, {"io_cancel", ""},
    {"io_pgetevents", ""},
};

constexpr SyscallEntry kNamespaceChange[] = {
    {"setns", "joining another namespace leaves the session's"},
    {"mount", "the filesystem view is fixed by the session; a user namespace would allow it"},
    {"umount2", "unmounting a mask would uncover a protected path"},
    {"pivot_root", "as mount"}, {"chroot", "as mount"},
    {"open_tree", "new mount API: same power as mount"}, {"move_mount", "as open_tree"},
    {"fsopen", "as open_tree"}, {"fsconfig", "as open_tree"}, {"fsmount", "as open_tree"},
    {"fspick", "as open_tree"}, {"mount_setattr", "could clear a read-only flag"},
};

constexpr SyscallEntry kKernelAttackSurface[] = {
    {"io_uring_setup", "io_uring bypasses seccomp for its operations and has a long CVE list"},
    {"io_uring_enter", "as io_uring_setup"}, {"io_uring_register", "as io_uring_setup"},
    {"bpf", "verifier bugs are a classic privilege escalation"},
    {"perf_event_open", "side channels and a large, often exploited interface"},
    {"userfaultfd", "stalls kernel threads at will: the usual race-widening exploit tool"},
    {"keyctl", "the keyring is not namespaced: it would reach the host user's keys"},
    {"add_key", "as keyctl"}, {"request_key", "as keyctl, and it can upcall to the host"},
    {"kexec_load", "replaces the running kernel"}, {"kexec_file_load", "as kexec_load"},
    {"init_module", "loads kernel code"}, {"finit_module", "as init_module"},
    {"delete_module", "unloads kernel code"}, {"modify_ldt", "16-bit segments: old attack surface"},
    {"iopl", "raw port I/O"}, {"ioperm", "raw port I/O"},
    {"fanotify_init", "filesystem-wide monitoring"}, {"fanotify_mark", "as fanotify_init"},
    {"migrate_pages", "moves another process's pages"}, {"move_pages", "as migrate_pages"},
};

constexpr SyscallEntry kOtherProcesses[] = {
    {"ptrace", "would let a worker read and write the memory of anything it can see"},
    {"process_vm_readv", "reads another process's memory"},
    {"process_vm_writev", "writes another process's memory"},
    {"kcmp", "compares kernel pointers of other processes: an info leak"},
    {"pidfd_getfd", "steals another process's file descriptors"},
    {"process_madvise", "changes another process's memory"},
    {"process_mrelease", "as process_madvise"},
};

// A file handle names an inode on its filesystem, not a path in the session's mount view.
constexpr SyscallEntry kFileHandles[] = {
    {"name_to_handle_at", "hands out handles (inode and generation) and mount ids: the raw "
                          "material for open_by_handle_at, and an inode oracle for the workspace's "
                          "filesystem beyond what the view shows"},
    {"open_by_handle_at", "opens files by handle, bypassing the mount view (the shocker exploit)"},
};

constexpr SyscallEntry kHostAdministration[] = {
    {"swapon", "host swap configuration"},
    {"swapoff", "as swapon"},
    {"reboot", "in a pid namespace it would kill the session; never wanted"},
    {"acct", "host process accounting"},
    {"settimeofday", "the clock is global"},
    {"clock_settime", "as settimeofday"},
    {"clock_adjtime", "as settimeofday"},
    {"adjtimex", "as settimeofday"},
    {"sethostname", "the session's hostname is fixed by moat"},
    {"setdomainname", "as sethostname"},
    {"syslog", "reads the host's kernel log"},
    {"vhangup", "hangs up the terminal"},
    {"quotactl", "host quota configuration"},
    {"quotactl_fd", "as quotactl"},
    {"lookup_dcookie", "profiling interface"},
    {"uselib", "a.out loader: obsolete attack surface"},
    {"_sysctl", "obsolete sysctl interface"},
    {"ustat", "obsolete"},
    {"sysfs", "obsolete"},
};

constexpr SyscallEntry kObsolete[] = {
    {"create_module", "removed from Linux"}, {"get_kernel_syms", "removed"},
    {"query_module", "removed"}, {"nfsservctl", "removed"}, {"getpmsg", "never implemented"},
    {"putpmsg", "never implemented"}, {"afs_syscall", "never implemented"},
    {"tuxcall", "never implemented"}, {"security", "never implemented"},
    {"vserver", "never implemented"}, {"epoll_ctl_old", "never implemented"},
    {"epoll_wait_old", "never implemented"},
};

// Emitted after the sets, in this order (the compiled program is pinned by a golden file).
constexpr NamedException kExceptions[] = {
    {"openat2", ENOSYS, "its mode sits behind a pointer the filter cannot read (see the mode "
                        "rules); ENOSYS makes callers fall back to openat"},
    {"clone3", ENOSYS, "its flags sit behind a pointer the filter cannot read; ENOSYS makes "
                       "glibc fall back to clone(2), whose flags are checked"},
};

constexpr SyscallSet kSets[] = {
    {"files", SetAction::kAllow, 0, "file I/O inside the mount view; DAC, Landlock and "
     "read-only mounts decide what is reachable", kFiles},
    {"memory", SetAction::kAllow, 0, "the process's own memory; bounded by RLIMIT_AS", kMemory},
    {"process", SetAction::kAllow, 0, "own process and children, ids mapped in the user "
     "namespace only", kProcess},
    {"signals_time_polling", SetAction::kAllow, 0, "signals, clocks, timers and waiting",
     kSignalsTime},
    {"sockets_ipc", SetAction::kAllow, 0, "socket operations on sockets the family check let "
     "exist; IPC in the session's namespace", kSocketsIpc},
    {"namespace_change", SetAction::kErrno, EPERM, "the session's namespaces and mounts are "
     "fixed; EPERM so tools that probe (bwrap, podman) report and move on", kNamespaceChange},
    {"kernel_attack_surface", SetAction::kErrno, EPERM, "large kernel interfaces coding tools "
     "do not need", kKernelAttackSurface},
    {"other_processes", SetAction::kErrno, EPERM, "reaching into another process", kOtherProcesses},
    {"file_handles", SetAction::kErrno, EPERM, "file handles reach files by inode, around the "
     "mount view; EPERM is what an unprivileged caller of open_by_handle_at gets anyway, and "
     "callers of name_to_handle_at (systemd, util-linux) fall back on it", kFileHandles},
    {"host_administration", SetAction::kErrno, EPERM, "global host state", kHostAdministration},
    {"obsolete", SetAction::kErrno, ENOSYS, "what the kernel does not implement, or what we "
     "want to look absent", kObsolete},
};
// clang-format on

}  // namespace

std::span<const SyscallSet> syscall_sets() { return kSets; }
std::span<const NamedException> named_exceptions() { return kExceptions; }

}  // namespace moat::sandbox
