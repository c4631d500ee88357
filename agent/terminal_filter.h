// agent/terminal_filter.h: what a sandboxed command prints on its pty, made safe for the
// person's terminal (`moat sandbox exec` at a terminal, agent/terminal_relay.h). Text, colours,
// cursor movement, erasing, the alternate screen and the modes full-screen programs set (vi,
// top, a REPL) pass; a sequence that makes the terminal answer into its input (DSR, DA,
// DECRQM, XTVERSION, window and title reports), writes the clipboard, sets the title, opens
// a link or carries a string for the terminal (OSC, DCS, SOS, PM, APC) is dropped whole.
// docs/security.md, "Terminal control sequences from the sandbox", holds the table.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace moat::agent {

class TerminalFilter {
 public:
  // A sequence's parameters and intermediates held while it is read (its final byte decides
  // it): an SGR with 24-bit colours for both planes is ~40 bytes; a longer one is dropped
  // whole without holding more.
  static constexpr std::size_t kMaxSequence = 256;

  // Appends to `out` what of `bytes` reaches the terminal. A sequence split across calls is
  // held (at most kMaxSequence bytes) and decided once it ends; a dropped string (OSC, DCS,
  // ...) is skipped as it comes, whatever its length. What `out` gets never leaves the
  // terminal inside a sequence: each one passed is whole.
  void feed(std::string_view bytes, std::string& out);

 private:
  enum class State { kGround, kEscape, kCsi, kIgnoreCsi, kString };
  void byte(unsigned char b, std::string& out);
  void control(unsigned char c, std::string& out);
  void printable(unsigned char b, std::string& out);
  void escape_byte(unsigned char b, std::string& out);
  void csi_byte(unsigned char b, std::string& out);

  State state_ = State::kGround;
  std::string seq_;             // an ESC or CSI sequence's bytes after its introducer
  bool c2_ = false;             // a UTF-8 C2 whose next byte says whether it is a C1 control
  int utf8_continuations_ = 0;  // a UTF-8 character's bytes still to come (passed as text)
};

}  // namespace moat::agent
