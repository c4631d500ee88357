// policy/toml_library.cc: toml++'s implementation, compiled once into moat instead of linked
// from libtomlplusplus.so, which cost every moat and moatd start a shared C++ library's loading
// and symbol lookups (issue 30; meson.build's toml_dep). Only this file defines
// TOML_IMPLEMENTATION; every other file includes toml++ as declarations (TOML_HEADER_ONLY=0).
//
// toml++'s own assertions stay off in every build type, as in the library this replaces (Debian
// builds it with NDEBUG): a mutated policy reaches one (parse_value's "not a value terminator",
// TomlLoad.MutatedPoliciesNeverCrashAndErrorsAlwaysNameAPosition), and an assert would end moatd
// on a repository's policy file, which is untrusted input; past it the parser reports the error
// with its position, as the test checks.
#define TOML_ASSERT(expr) static_cast<void>(0)
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
