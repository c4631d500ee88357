// tools/image.cc: magic-number sniffing (the signatures of the PNG, JPEG, GIF and RIFF/WebP
// specifications).
#include "tools/image.h"

namespace moat::tools {

std::optional<std::string> sniff_image_mime(std::string_view h) {
  if (h.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return "image/png";
  if (h.substr(0, 3) == "\xFF\xD8\xFF") return "image/jpeg";
  if (h.substr(0, 6) == "GIF87a" || h.substr(0, 6) == "GIF89a") return "image/gif";
  if (h.size() >= 12 && h.substr(0, 4) == "RIFF" && h.substr(8, 4) == "WEBP") return "image/webp";
  return std::nullopt;
}

}  // namespace moat::tools
