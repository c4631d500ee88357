// policy/command_unit.cc: a command unit's argv as explain and audit records show it.
#include "policy/command_unit.h"

namespace moat::policy {

std::string CommandUnit::argv_text() const {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = a.known && !a.text.empty() &&
                 a.text.find_first_of(" \t\n'\"\\$`;&|<>()*?[]{}~#") == std::string::npos;
    if (plain || !a.known) {
      out += a.home ? "~" + a.text : a.text;
    } else {
      out += '\'';
      for (char c : a.text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace moat::policy
