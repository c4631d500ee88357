// agent/terminal_filter.cc: the sandbox's terminal output, sequence by sequence (see
// terminal_filter.h). The parser follows the DEC VT500 state machine (vt100.net/emu/dec_ansi_parser)
// as xterm and tmux do; what passes is an allowlist: a sequence no row names is dropped.
#include "agent/terminal_filter.h"

#include <algorithm>

namespace moat::agent {
namespace {

constexpr unsigned char kEsc = 0x1b;

// C0 controls a terminal acts on that pass: each only moves the cursor, rings the bell or
// shifts the character set. Dropped: NUL, ENQ (the terminal answers with its answerback
// string), and the rest, which terminals ignore.
bool is_passed_c0(unsigned char c) {
  switch (c) {
    case 0x07:  // BEL
    case 0x08:  // BS
    case 0x09:  // HT
    case 0x0a:  // LF
    case 0x0b:  // VT
    case 0x0c:  // FF
    case 0x0d:  // CR
    case 0x0e:  // SO: line-drawing characters (ncurses with some terminfo entries)
    case 0x0f:  // SI
      return true;
    default:
      return false;
  }
}

// ESC sequences (ESC, intermediates 0x20-0x2F, a final 0x30-0x7E) that pass. `intermediate`
// 0: none; the row's first intermediate otherwise (a charset designation may carry a second,
// `ESC ( % 5`). `finals` empty: any final.
struct EscRow {
  char intermediate;
  std::string_view finals;
  const char* what;
};
constexpr EscRow kEscPassed[] = {
    {0, "78", "DECSC, DECRC: save and restore the cursor"},
    {0, "=>", "DECKPAM, DECKPNM: keypad modes"},
    {0, "DEHMNO", "IND, NEL, HTS, RI, SS2, SS3"},
    {0, "69", "DECBI, DECFI: back and forward index"},
    {0, "no|}~", "LS2, LS3, LS3R, LS2R, LS1R: locking shifts"},
    {0, "c", "RIS: full reset (what `reset` sends)"},
    {'(', "", "G0 character set (ESC ( 0: line drawing, as top and ncurses use)"},
    {')', "", "G1 character set"},
    {'*', "", "G2 character set"},
    {'+', "", "G3 character set"},
    {'-', "", "G1 96-character set"},
    {'.', "", "G2 96-character set"},
    {'/', "", "G3 96-character set"},
    {'#', "34568", "DECDHL, DECSWL, DECDWL, DECALN: line size, screen test"},
};
// Left out on purpose: ESC Z (DECID: the terminal answers with its attributes), ESC % @ and
// ESC % G (leave or enter UTF-8: out of UTF-8, the terminal would read 8-bit C1 controls
// this filter passed as text), ESC SP F/G (7- or 8-bit controls in its answers), ESC \ alone.

// CSI sequences that pass, by final byte, private marker (the first parameter byte when it
// is one of < = > ?; 0: none) and intermediate (0: none). Any parameters.
struct CsiRow {
  char final;
  char marker;
  char intermediate;
  const char* what;
};
constexpr CsiRow kCsiPassed[] = {
    {'@', 0, 0, "ICH: insert characters"},
    {'A', 0, 0, "CUU: cursor up"},
    {'B', 0, 0, "CUD: cursor down"},
    {'C', 0, 0, "CUF: cursor forward"},
    {'D', 0, 0, "CUB: cursor back"},
    {'E', 0, 0, "CNL: cursor next line"},
    {'F', 0, 0, "CPL: cursor previous line"},
    {'G', 0, 0, "CHA: cursor to column"},
    {'H', 0, 0, "CUP: cursor position"},
    {'I', 0, 0, "CHT: forward tabs"},
    {'J', 0, 0, "ED: erase in display"},
    {'J', '?', 0, "DECSED: selective erase in display"},
    {'K', 0, 0, "EL: erase in line"},
    {'K', '?', 0, "DECSEL: selective erase in line"},
    {'L', 0, 0, "IL: insert lines"},
    {'M', 0, 0, "DL: delete lines"},
    {'P', 0, 0, "DCH: delete characters"},
    {'S', 0, 0, "SU: scroll up"},
    {'T', 0, 0, "SD: scroll down"},
    {'X', 0, 0, "ECH: erase characters"},
    {'Z', 0, 0, "CBT: backward tabs"},
    {'`', 0, 0, "HPA: column absolute"},
    {'a', 0, 0, "HPR: column relative"},
    {'b', 0, 0, "REP: repeat the last character"},
    {'d', 0, 0, "VPA: line absolute"},
    {'e', 0, 0, "VPR: line relative"},
    {'f', 0, 0, "HVP: cursor position"},
    {'g', 0, 0, "TBC: clear tabs"},
    {'h', 0, 0, "SM: set mode (insert)"},
    {'h', '?', 0, "DECSET: alternate screen, bracketed paste, cursor, mouse and focus reports"},
    {'l', 0, 0, "RM: reset mode"},
    {'l', '?', 0, "DECRST"},
    {'m', 0, 0, "SGR: colours and attributes"},
    {'m', '>', 0, "XTMODKEYS: key modifier encoding (vim sets modifyOtherKeys)"},
    {'p', 0, '!', "DECSTR: soft reset"},
    {'q', 0, 0, "DECLL: keyboard LEDs"},
    {'q', 0, ' ', "DECSCUSR: cursor shape"},
    {'q', 0, '"', "DECSCA: character protection"},
    {'r', 0, 0, "DECSTBM: scrolling region"},
    {'r', '?', 0, "XTRESTORE: restore DEC private modes"},
    {'s', 0, 0, "SCOSC, DECSLRM: save the cursor, left and right margins"},
    {'s', '?', 0, "XTSAVE: save DEC private modes"},
    {'u', 0, 0, "SCORC: restore the cursor"},
    {'u', '>', 0, "kitty keyboard: push flags"},
    {'u', '<', 0, "kitty keyboard: pop flags"},
    {'u', '=', 0, "kitty keyboard: set flags"},
};
// Left out on purpose, each makes the terminal answer into its input or reach past the
// screen: n (DSR: status, cursor position), c (DA1, DA2, DA3), x (DECREQTPARM), t (XTWINOPS:
// title and size reports, title stack, window moves and resizes), $p (DECRQM), >q
// (XTVERSION), ?u (kitty keyboard query), ?m (XTQMODKEYS), ?S (XTSMGRAPHICS), i (MC: the
// printer), |, y, and every other one.

bool esc_passes(std::string_view seq) {
  const char final = seq.back();
  const char inter = seq.size() > 1 ? seq.front() : 0;
  return std::any_of(std::begin(kEscPassed), std::end(kEscPassed), [&](const EscRow& r) {
    return r.intermediate == inter &&
           (r.finals.empty() || r.finals.find(final) != std::string_view::npos);
  });
}

// `seq`: the bytes after CSI, its final last.
bool csi_passes(std::string_view seq) {
  const char final = seq.back();
  std::string_view body = seq.substr(0, seq.size() - 1);
  char marker = 0;
  if (!body.empty() && std::string_view("<=>?").find(body.front()) != std::string_view::npos) {
    marker = body.front();
    body.remove_prefix(1);
  }
  // Parameters (digits, ';', ':') then at most one intermediate; anything else is malformed.
  const std::size_t params = body.find_first_not_of("0123456789;:");
  const std::string_view inters = params == std::string_view::npos ? "" : body.substr(params);
  if (inters.size() > 1 || (inters.size() == 1 && (inters[0] < 0x20 || inters[0] > 0x2f)))
    return false;
  const char inter = inters.empty() ? 0 : inters[0];
  return std::any_of(std::begin(kCsiPassed), std::end(kCsiPassed), [&](const CsiRow& r) {
    return r.final == final && r.marker == marker && r.intermediate == inter;
  });
}

}  // namespace

void TerminalFilter::feed(std::string_view bytes, std::string& out) {
  for (const char c : bytes) byte(static_cast<unsigned char>(c), out);
}

// UTF-8 first, as the terminal reads it: a C1 control is 0x80-0x9F alone or C2 80-C2 9F
// (U+0080-U+009F, which xterm acts on); a character's continuation bytes are text even where
// they fall in 0x80-0x9F ("œ" is C5 93).
void TerminalFilter::byte(unsigned char b, std::string& out) {
  if (c2_) {
    c2_ = false;
    if (b >= 0x80 && b <= 0x9f) return control(b, out);
    printable(0xc2, out);
    utf8_continuations_ = 1;
  }
  if (utf8_continuations_ > 0) {
    if (b >= 0x80 && b <= 0xbf) {
      --utf8_continuations_;
      return printable(b, out);
    }
    utf8_continuations_ = 0;
  }
  if (b == 0xc2) {
    c2_ = true;
    return;
  }
  if (b < 0x20 || (b >= 0x7f && b <= 0x9f)) return control(b, out);
  if (b >= 0xc3 && b <= 0xdf) utf8_continuations_ = 1;
  if (b >= 0xe0 && b <= 0xef) utf8_continuations_ = 2;
  if (b >= 0xf0 && b <= 0xf4) utf8_continuations_ = 3;
  printable(b, out);
}

void TerminalFilter::control(unsigned char c, std::string& out) {
  if (c >= 0x80) {
    // A C1 control is ESC and the byte 0x40 below it (CSI is ESC [, ST is ESC \); a sequence
    // it introduces passes, if it does, in its 7-bit form.
    state_ = State::kEscape;
    seq_.clear();
    return escape_byte(static_cast<unsigned char>(c - 0x40), out);
  }
  if (c == kEsc) {  // ends a string (ESC \ is ST) and abandons a sequence being read
    state_ = State::kEscape;
    seq_.clear();
    return;
  }
  if (c == 0x18 || c == 0x1a) {  // CAN, SUB: the sequence being read is cancelled
    state_ = State::kGround;
    return;
  }
  if (state_ == State::kString) {
    if (c == 0x07) state_ = State::kGround;  // BEL ends an OSC (xterm); any string here
    return;
  }
  // Inside a sequence a terminal executes a C0 control and goes on with the sequence, so it
  // passes now, ahead of the sequence's bytes, which come out together if they pass.
  if (is_passed_c0(c)) out += static_cast<char>(c);
}

void TerminalFilter::printable(unsigned char b, std::string& out) {
  switch (state_) {
    case State::kGround:
      out += static_cast<char>(b);
      return;
    case State::kString:
      return;  // the string's content goes nowhere
    case State::kEscape:
      return escape_byte(b, out);
    case State::kCsi:
    case State::kIgnoreCsi:
      return csi_byte(b, out);
  }
}

void TerminalFilter::escape_byte(unsigned char b, std::string& out) {
  if (b >= 0x80) {  // not part of any sequence: the sequence is abandoned, the byte is text
    state_ = State::kGround;
    out += static_cast<char>(b);
    return;
  }
  if (seq_.empty() && b == '[') {
    state_ = State::kCsi;
    return;
  }
  // OSC, DCS, SOS, PM, APC: strings for the terminal (titles, clipboard, links, queries,
  // graphics, tmux's passthrough), dropped to their end.
  if (seq_.empty() && std::string_view("]PX^_").find(static_cast<char>(b)) != std::string_view::npos) {
    state_ = State::kString;
    return;
  }
  // No sequence that passes is longer than three bytes after ESC: a longer one is held at
  // four, and dropped at its final.
  if (seq_.size() < 4) seq_ += static_cast<char>(b);
  else seq_.back() = static_cast<char>(b);
  if (b >= 0x20 && b <= 0x2f) return;  // an intermediate: the final is still to come
  state_ = State::kGround;
  if (seq_.size() <= 3 && esc_passes(seq_)) {
    out += static_cast<char>(kEsc);
    out += seq_;
  }
  seq_.clear();
}

void TerminalFilter::csi_byte(unsigned char b, std::string& out) {
  if (b >= 0x80) {
    state_ = State::kGround;
    out += static_cast<char>(b);
    return;
  }
  if (b < 0x40) {  // a parameter or an intermediate
    if (seq_.size() >= kMaxSequence) state_ = State::kIgnoreCsi;
    if (state_ == State::kCsi) seq_ += static_cast<char>(b);
    return;
  }
  // The final byte (0x40-0x7E): the whole sequence passes or none of it does.
  const bool passes = state_ == State::kCsi && csi_passes(seq_ + static_cast<char>(b));
  if (passes) {
    out += "\x1b[";
    out += seq_;
    out += static_cast<char>(b);
  }
  state_ = State::kGround;
  seq_.clear();
}

}  // namespace moat::agent
