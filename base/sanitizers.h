// base/sanitizers.h: whether this build runs under AddressSanitizer (meson -Dsanitizers=true).
// A few sandbox mechanisms cannot work with ASan's runtime and are changed in such builds
// only; each use says what and why. Release and test builds are never affected.
#pragma once

namespace moat {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace moat
