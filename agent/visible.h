// agent/visible.h: untrusted text made safe to show a person: control characters and escape
// sequences are shown, as `cat -v` shows them, instead of acted on by the terminal.
#pragma once

#include <string>
#include <string_view>

namespace moat::agent {

// Every byte a terminal would act on becomes visible text: C0 controls except \t and \n as
// ^@..^_ (ESC is ^[, CR is ^M), DEL as ^?, and C1 controls (UTF-8 C2 80..9F) as M-^@..M-^_,
// as `cat -v` shows the byte 0x80..0x9F. Other UTF-8 passes unchanged. `carry` holds a C2
// split from its next byte between calls (a stream read in pieces).
std::string visible(std::string_view bytes, std::string& carry);

// The same for one whole piece of text (a lone C2 at its end is kept: it is not a control).
std::string visible(std::string_view text);

}  // namespace moat::agent
