// tests/integration/e2e/tmux_session.h: a real terminal for tests: a tmux server of the
// test's own, keys sent with send-keys, the screen read with capture-pane.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "e2e_support.h"

namespace moat::e2e {

// A tmux server of the test's own, removed with it.
class Tmux {
 public:
  explicit Tmux(std::string name) : name_(std::move(name)) {}
  static bool installed() { return std::system("command -v tmux >/dev/null 2>&1") == 0; }
  ~Tmux() { (void)tmux("kill-server"); }
  // SHELL=/bin/sh: tmux runs a session's command with the user's shell, and without SHELL in
  // the environment (CI) that is the passwd entry's, /usr/sbin/nologin for uid 65534, which
  // refuses the command and ends the session (and the server) at once.
  int tmux(const std::string& args) const {
    return std::system(
        ("SHELL=/bin/sh tmux -L " + name_ + " -f /dev/null " + args + " >/dev/null 2>&1").c_str());
  }
  // The screen's text; `attributes`: with the escape sequences of its colours and attributes
  // (capture-pane -e), as tmux keeps them per cell.
  std::string pane(bool attributes = false) const {
    const std::string file = "/tmp/" + name_ + ".pane";
    (void)std::system(("tmux -L " + name_ + " capture-pane -p " + (attributes ? "-e " : "") +
                       "-t t > " + file)
                          .c_str());
    std::string s = read_file(file);
    std::filesystem::remove(file);
    return s;
  }
  bool shows(const std::string& text, int seconds = 20) const {
    return eventually([&] { return pane().find(text) != std::string::npos; },
                      std::chrono::seconds(seconds));
  }
  void keys(const std::string& keys) const { (void)tmux("send-keys -t t " + keys); }

 private:
  std::string name_;
};

}  // namespace moat::e2e
