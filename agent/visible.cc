// agent/visible.cc: control characters shown as `cat -v` shows them (visible.h).
#include "agent/visible.h"

#include <utility>

namespace moat::agent {
namespace {

// ^X for the C0 control c, ^? for DEL.
void append_caret(std::string& out, unsigned char c) {
  out += '^';
  out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
}

}  // namespace

std::string visible(std::string_view bytes, std::string& carry) {
  std::string in = std::exchange(carry, std::string()) + std::string(bytes);
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == 0xc2) {
      if (i + 1 == in.size()) {
        carry = "\xc2";
        break;
      }
      const auto next = static_cast<unsigned char>(in[i + 1]);
      if (next >= 0x80 && next <= 0x9f) {
        ++i;  // a C1 control: ESC by another name (CSI is C2 9B)
        out += "M-";
        append_caret(out, static_cast<unsigned char>(next - 0x80));
        continue;
      }
    }
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      append_caret(out, c);
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string visible(std::string_view text) {
  std::string carry;
  std::string out = visible(text, carry);
  return out + carry;
}

}  // namespace moat::agent
