// tests/integration/e2e/terminal_relay_test.cc: `moat sandbox exec` at a real terminal (tmux)
// as the sandbox sees it and as the person's terminal gets it (issue 26, items 16 and 17):
// control sequences that would answer into the terminal's input, set its title or its
// clipboard never reach tmux while colours do; the sandbox's terminal is moat's relay pty, and
// nothing done to it from inside changes the person's terminal.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "base/shell_words.h"
#include "e2e_support.h"
#include "tmux_session.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

class TerminalRelayTest : public WorkspaceTest {
 protected:
  void SetUp() override {
    WorkspaceTest::SetUp();
    if (IsSkipped()) return;
    if (!Tmux::installed())
      GTEST_SKIP() << "tmux is not installed (it stands in for a person at a terminal)";
    t_ = std::make_unique<Tmux>("moat-relay-" + std::to_string(getpid()));
  }
  // A shell line running `moat sandbox exec --permissive -C WS -- ARGS`, then
  // reporting its exit and staying (so the pane stays to be looked at).
  // It starts once the test has created dir_/go, having looked at the pane first.
  std::string line(const std::string& args, const std::string& after = "") const {
    std::string envs;
    for (const std::string& e : env()) envs += shell_quote(e) + " ";
    return "while [ ! -e " + shell_quote(go()) + " ]; do sleep 0.1; done; env " + envs + shell_quote(moat_bin()) +
           " sandbox exec --permissive --audit-dir " + shell_quote(dir_.path() + "/audit") +
           " -C " + shell_quote(ws_) + " -- " + args + after + "; echo EXIT=$?; sleep 60";
  }
  // What tmux says of the pane (a format such as #{pane_title}).
  std::string display(const std::string& format) const {
    const std::string file = dir_.path() + "/display";
    const std::string cmd = "tmux -L moat-relay-" + std::to_string(getpid()) + " display -p -t t " +
                            shell_quote(format) + " > " + shell_quote(file) + " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) return "";
    std::string s = read_file(file);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  std::string go() const { return dir_.path() + "/go"; }
  void start() const { std::ofstream(go()) << ""; }
  std::unique_ptr<Tmux> t_;
};

// What a program prints to query or take over the terminal: if tmux acted on any of it, the
// pane's title would be "pwned-title", tmux's paste buffer would hold "pwned-clip" (tmux
// takes OSC 52 with set-clipboard on), and tmux's answers to DA1, DA2, DSR and XTVERSION
// would be typed into the program's input, which it reads back for 2 s.
constexpr const char* kQueries =
    "stty -icanon -echo min 0 time 20; "
    "printf '\\033]2;pwned-title\\007\\033]0;pwned-title\\033\\\\'; "
    "printf '\\033]52;c;cHduZWQtY2xpcA==\\007'; "
    "printf '\\033]8;;https://evil.example/\\033\\\\link\\033]8;;\\033\\\\\\n'; "
    "printf '\\033[c\\033[>c\\033[5n\\033[6n\\033[>q\\033[21t\\033[18t\\033P+q544e\\033\\\\'; "
    "printf '\\302\\233c\\302\\2350;pwned-title\\007'; "
    "printf '\\033[31mRED\\033[0m plain\\n'; "
    "r=$(dd bs=256 count=1 2>/dev/null | od -An -c | tr -d ' \\n'); stty sane; "
    "echo \"REPLY:[$r]\"";

TEST_F(TerminalRelayTest, QueriesTitleClipboardAndLinksFromTheSandboxNeverReachTheTerminal) {
  ASSERT_EQ(t_->tmux("new-session -d -s t -x 100 -y 30 " + shell_quote(line("sh -c " + shell_quote(kQueries)))), 0);
  ASSERT_EQ(t_->tmux("set -g set-clipboard on"), 0);
  start();
  ASSERT_TRUE(t_->shows("EXIT=", 60)) << t_->pane();
  const std::string pane = t_->pane();
  EXPECT_NE(pane.find("REPLY:[]"), std::string::npos)
      << "the terminal answered into the sandbox's input:\n" << pane;
  EXPECT_NE(pane.find("EXIT=0"), std::string::npos) << pane;
  EXPECT_NE(display("#{pane_title}"), "pwned-title");
  const std::string buffers = dir_.path() + "/buffers";
  (void)std::system(("tmux -L moat-relay-" + std::to_string(getpid()) + " list-buffers > " +
                     shell_quote(buffers) + " 2>&1")
                        .c_str());
  EXPECT_EQ(read_file(buffers).find("pwned"), std::string::npos)
      << "OSC 52 wrote the clipboard: " << read_file(buffers);
  // Colours still pass: RED is drawn in red (tmux keeps it per cell), the link's text shows.
  EXPECT_NE(pane.find("link"), std::string::npos) << pane;
  const std::string styled = t_->pane(true);
  EXPECT_NE(styled.find("31mRED"), std::string::npos) << styled;
}

// Bytes to a file stay exact: only the terminal's share of fds 0-2 is relayed and filtered.
TEST_F(TerminalRelayTest, OutputToAFileAtATerminalIsExact) {
  const std::string bytes = "\\033]52;c;eA==\\007\\033[6n\\033]2;t\\007x";
  const std::string file = dir_.path() + "/out.bin";
  ASSERT_EQ(t_->tmux("new-session -d -s t -x 100 -y 30 " +
                     shell_quote(line("printf " + shell_quote(bytes), " > " + shell_quote(file)))),
            0);
  start();
  ASSERT_TRUE(t_->shows("EXIT=0", 60)) << t_->pane();
  EXPECT_EQ(read_file(file), "\x1b]52;c;eA==\x07\x1b[6n\x1b]2;t\x07x");
}

// The probe run inside: its terminal as the kernel names it, then each thing a program might
// try on a controlling terminal to reach the one behind it. Prints KEY=VALUE lines.
constexpr const char* kTtyProbe = R"PY(
import ctypes, errno, fcntl, os, struct, termios
def dev(d): return "%d:%d" % (os.major(d), os.minor(d))
def tried(name, f):
    try:
        f(); print("%s=ok" % name)
    except OSError as e:
        print("%s=%s" % (name, errno.errorcode.get(e.errno, e.errno)))
print("FD0=" + dev(os.fstat(0).st_rdev))
print("CTTY=" + dev(int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4])))
try:
    tty = os.open("/dev/tty", os.O_RDWR)
    got = fcntl.ioctl(tty, 0x80045432, b"\0\0\0\0")  # TIOCGDEV: the tty behind /dev/tty
    print("DEVTTY=" + dev(struct.unpack("I", got)[0]))
except OSError as e:
    tty = 0
    print("DEVTTY=" + errno.errorcode.get(e.errno, str(e.errno)))
for fd, where in ((0, "FD0"), (tty, "DEVTTY")):
    tried(where + "_TIOCSTI", lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"zq"))
    tried(where + "_TIOCSPGRP", lambda: fcntl.ioctl(fd, termios.TIOCSPGRP, struct.pack("i", os.getpgrp())))
    tried(where + "_TIOCSETD", lambda: fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", 0)))
    tried(where + "_TIOCLINUX", lambda: fcntl.ioctl(fd, 0x541C, b"\x0b"))
    def raw():
        m = termios.tcgetattr(fd); m[3] &= ~(termios.ECHO | termios.ICANON); termios.tcsetattr(fd, termios.TCSANOW, m)
    tried(where + "_TCSETS", raw)
libc = ctypes.CDLL(None, use_errno=True)
r = libc.vhangup()
print("VHANGUP=" + ("ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
print("PROBE_DONE")
)PY";

// /proc/PID/stat's field `n` (1-based, counted after the command's closing parenthesis as 3).
std::string stat_field(pid_t pid, int n) {
  const std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(s.substr(s.rfind(')') + 2));
  std::string f;
  for (int i = 3; i <= n && (rest >> f); ++i) {}
  return f;
}

std::string dev_of(dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); }

TEST_F(TerminalRelayTest, TheSandboxsTerminalIsTheRelayPtyAndNothingFromInsideReachesThePersons) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the sandbox";
  std::ofstream(ws_ + "/tty_probe.py") << kTtyProbe;
  // The pane waits for the test to note its terminal's state before moat starts.
  ASSERT_EQ(t_->tmux("new-session -d -s t -x 150 -y 50 " + shell_quote(line("python3 " + shell_quote(ws_ + "/tty_probe.py")))),
            0);
  std::string pane_tty;
  ASSERT_TRUE(eventually([&] { return !(pane_tty = display("#{pane_tty}")).empty(); },
                         std::chrono::seconds(10)));
  const pid_t shell = static_cast<pid_t>(std::stoi(display("#{pane_pid}")));
  struct stat person {};
  ASSERT_EQ(stat(pane_tty.c_str(), &person), 0) << pane_tty;
  const int fd = open(pane_tty.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << pane_tty;
  termios before {};
  ASSERT_EQ(tcgetattr(fd, &before), 0);
  const std::string fg_before = stat_field(shell, 8);  // tpgid: the terminal's foreground group
  start();

  ASSERT_TRUE(t_->shows("EXIT=", 60)) << t_->pane();
  const std::string pane = t_->pane();
  std::map<std::string, std::string> got;
  std::istringstream lines(pane);
  for (std::string l; std::getline(lines, l);) {
    const auto eq = l.find('=');
    if (eq != std::string::npos && l.find(' ') == std::string::npos)
      got[l.substr(0, eq)] = l.substr(eq + 1);
  }
  ASSERT_EQ(got.count("VHANGUP"), 1u) << pane;
  EXPECT_NE(pane.find("EXIT=0"), std::string::npos) << pane;
  SCOPED_TRACE(pane);

  // The sandbox's terminal (fd 0, its controlling tty, what /dev/tty opens) is one pty, and
  // not the person's.
  EXPECT_NE(got["FD0"], dev_of(person.st_rdev)) << "the sandbox holds the person's terminal";
  EXPECT_EQ(got["CTTY"], got["FD0"]) << "its controlling terminal is the relay pty";
  EXPECT_EQ(got["DEVTTY"], got["FD0"]) << "/dev/tty is the relay pty";
  // TIOCSTI and TIOCLINUX are refused by the seccomp filter; vhangup needs a capability.
  EXPECT_EQ(got["FD0_TIOCSTI"], "EPERM");
  EXPECT_EQ(got["VHANGUP"], "EPERM");

  // And the person's terminal: its modes, its foreground group and its input are as before.
  termios after {};
  ASSERT_EQ(tcgetattr(fd, &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
  EXPECT_EQ(after.c_cflag, before.c_cflag);
  EXPECT_EQ(stat_field(shell, 8), fg_before) << "the foreground group of the person's terminal";
  int queued = -1;
  EXPECT_EQ(ioctl(fd, FIONREAD, &queued), 0);
  EXPECT_EQ(queued, 0) << "something was typed into the person's terminal";
  close(fd);
}

}  // namespace
}  // namespace moat::e2e
