// tools/image.h: image detection from bytes (never from the file name).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace moat::tools {

// "image/png", "image/jpeg", "image/gif" or "image/webp" when the first bytes carry that
// format's signature; nullopt otherwise.
std::optional<std::string> sniff_image_mime(std::string_view head);

}  // namespace moat::tools
