// tests/probes/probe.cc: moat_probe, run inside a sandbox worker: tries one thing and prints
// the outcome ("ok" or the errno's name), like bwrap's try-syscall.c. Arguments are chosen so
// an allowed syscall fails with EBADF, EFAULT or EINVAL, while a filtered one fails with the
// filter's errno: the printed name says which layer answered. Plain libc only, no moat code:
// it is copied into the workspace and must run with what the sandbox shows.
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

namespace {

int report(long rc) {
  if (rc < 0) {
    const char* name = strerrorname_np(errno);
    printf("%s\n", name ? name : "E?");
  } else {
    printf("ok\n");
  }
  return 0;
}

unsigned long arg(int argc, char** argv, int i) {
  return i < argc ? strtoul(argv[i], nullptr, 0) : 0;
}

// syscall NR [a0..a5]: "-1" is parsed as all ones (an invalid fd and a bad pointer at once).
int raw_syscall(int argc, char** argv) {
  long nr = strtol(argv[2], nullptr, 0);
  unsigned long a[6];
  for (int i = 0; i < 6; ++i) a[i] = arg(argc, argv, 3 + i);
  errno = 0;
  return report(syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

int socket_family(const char* family) {
  return report(socket(atoi(family), SOCK_DGRAM, 0));  // a type every family has
}

int connect_tcp(const char* host, const char* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return report(fd);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(atoi(port)));
  inet_pton(AF_INET, host, &addr.sin_addr);
  return report(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
}

socklen_t abstract_address(const char* name, sockaddr_un* addr) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  strncpy(addr->sun_path + 1, name, sizeof addr->sun_path - 2);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + strlen(name));
}

int connect_abstract(const char* name) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return report(fd);
  sockaddr_un addr;
  socklen_t len = abstract_address(name, &addr);
  return report(connect(fd, reinterpret_cast<sockaddr*>(&addr), len));
}

// Listens on an abstract socket, prints "listening", then waits in accept until it is killed
// (the caller ends the call) or a peer connects ("accepted").
int listen_abstract(const char* name) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return report(fd);
  sockaddr_un addr;
  socklen_t len = abstract_address(name, &addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 1) != 0)
    return report(-1);
  printf("listening\n");
  return accept(fd, nullptr, nullptr) < 0 ? report(-1) : (printf("accepted\n"), 0);
}

// x32 and i386 entry points: the filter kills the process (SIGSYS), so "alive" must never
// be printed.
int x32_getpid() {
  syscall(0x40000000L | SYS_getpid);
  printf("alive\n");
  return 0;
}

int int80_getpid() {
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");  // i386 getpid
  printf("alive %ld\n", ret);
  return 0;
}

// Forks until the kernel refuses; the children wait to be killed with the worker's group.
int fork_bomb() {
  for (int n = 0;; ++n) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid < 0) {
      printf("fork %s after %d\n", strerrorname_np(errno), n);
      return 0;
    }
  }
}

int setuid_file(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT, 04755);
  printf("create ");
  report(fd);
  if (fd >= 0) close(fd);
  fd = open(path, O_WRONLY | O_CREAT, 0755);
  if (fd >= 0) close(fd);
  printf("chmod ");
  report(chmod(path, 04755));
  printf("chmod-g ");
  return report(chmod(path, 02755));
}

// name_to_handle_at on a real path with a large buffer, then open_by_handle_at of what it gave.
int handle_probe(const char* path) {
  union {
    struct file_handle fh;
    char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
  } h{};
  h.fh.handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  printf("name ");
  report(name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0));
  printf("open ");
  return report(open_by_handle_at(AT_FDCWD, &h.fh, O_RDONLY));
}

// fallocate(MODE, 0, LEN) on PATH (created), then the bytes the file holds on disk. SIGXFSZ
// is ignored so an RLIMIT_FSIZE refusal prints EFBIG instead of killing the probe.
int allocate(const char* mode, const char* len, const char* path) {
  signal(SIGXFSZ, SIG_IGN);
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0) return report(fd);
  long rc = fallocate(fd, static_cast<int>(strtol(mode, nullptr, 0)), 0,
                      static_cast<off_t>(strtoll(len, nullptr, 0)));
  report(rc);
  struct stat st;
  fstat(fd, &st);
  printf("%lld\n", static_cast<long long>(st.st_blocks) * 512);
  close(fd);
  return 0;
}

// Creates inotify instances until the kernel refuses, prints how many and why it stopped,
// creates READY, then holds them until RELEASE exists (or about 30 s pass).
int inotify_hold(const char* ready, const char* release) {
  int n = 0;
  while (inotify_init1(IN_CLOEXEC) >= 0) ++n;
  const char* why = strerrorname_np(errno);
  printf("held %d %s\n", n, why ? why : "E?");
  close(open(ready, O_WRONLY | O_CREAT, 0644));
  for (int i = 0; i < 3000 && access(release, F_OK) != 0; ++i) usleep(10000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: moat_probe <probe> [args]\n");
    return 2;
  }
  const char* p = argv[1];
  if (!strcmp(p, "syscall") && argc >= 3) return raw_syscall(argc, argv);
  if (!strcmp(p, "socket") && argc == 3) return socket_family(argv[2]);
  if (!strcmp(p, "socketpair") && argc == 3) {
    int sv[2];
    return report(socketpair(atoi(argv[2]), SOCK_DGRAM, 0, sv));
  }
  if (!strcmp(p, "connect") && argc == 4) return connect_tcp(argv[2], argv[3]);
  if (!strcmp(p, "abstract") && argc == 3) return connect_abstract(argv[2]);
  if (!strcmp(p, "abstract-listen") && argc == 3) return listen_abstract(argv[2]);
  if (!strcmp(p, "ioctl") && argc == 3)
    return report(syscall(SYS_ioctl, -1, arg(argc, argv, 2), 0));
  if (!strcmp(p, "personality") && argc == 3)
    return report(syscall(SYS_personality, arg(argc, argv, 2)));
  if (!strcmp(p, "x32")) return x32_getpid();
  if (!strcmp(p, "int80")) return int80_getpid();
  if (!strcmp(p, "fork-bomb")) return fork_bomb();
  if (!strcmp(p, "setuid-file") && argc == 3) return setuid_file(argv[2]);
  if (!strcmp(p, "fallocate") && argc == 5) return allocate(argv[2], argv[3], argv[4]);
  if (!strcmp(p, "inotify-hold") && argc == 4) return inotify_hold(argv[2], argv[3]);
  if (!strcmp(p, "file-handle") && argc == 3) return handle_probe(argv[2]);
  if (!strcmp(p, "kill") && argc == 3) return report(kill(atoi(argv[2]), 0));
  fprintf(stderr, "moat_probe: unknown probe %s\n", p);
  return 2;
}
