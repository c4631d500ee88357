// tools/image.h: image detection from bytes (never from the file name) and base64 for
// image blocks.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace moat::tools {

// "image/png", "image/jpeg", "image/gif" or "image/webp" when the first bytes carry that
// format's signature; nullopt otherwise.
std::optional<std::string> sniff_image_mime(std::string_view head);

std::string base64_encode(std::string_view bytes);
// Decodes standard base64 (rg --json sends non-UTF-8 lines that way); stops at the first
// character outside the alphabet.
std::string base64_decode(std::string_view text);

}  // namespace moat::tools
