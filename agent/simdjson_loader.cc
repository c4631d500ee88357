// agent/simdjson_loader.cc: what the `moat` binary takes from libsimdjson, loaded on first use.
//
// libsimdjson is a shared C++ library that only reading a session file needs (sessions/store.cc,
// resume and `moat sessions`), but every start paid for loading it (its 171 symbol bindings and
// its initialisers, 0.2M instructions; issue 30). Everything moat uses of simdjson is inline in
// its header except the active implementation (the parser's SIMD kernels, chosen for this CPU)
// and the table of error messages. This file, linked into `moat` only (moatd and the tests link
// libsimdjson itself), defines the first as a forwarder to the library's own, opened the first
// time a parser allocates, and the second as sessions::simd_error_message (whose default,
// sessions/simd_errors.cc, the linker then leaves out). With it --as-needed leaves libsimdjson out
// of moat's needed libraries; a new use of the library outside these two brings it back, which
// MoatCliTest.MoatStartsWithoutSimdjsonAndOpensItToShowASession reports.
//
// One C++ runtime: the library is opened with the libstdc++ moat is linked with, so the objects
// the parser hands over (its implementation, the unique_ptr it fills) are made and freed by one
// copy of it. The soname is the one the link would have recorded (MOAT_SIMDJSON_SONAME, read from
// the library at configure time).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <simdjson.h>

#include "sessions/simd_errors.h"

namespace {

// libsimdjson, opened once; a machine without it cannot read a session.
void* libsimdjson() {
  static void* const handle = [] {
    void* h = ::dlopen(MOAT_SIMDJSON_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      std::fprintf(stderr, "moat: %s could not be loaded: %s\n", MOAT_SIMDJSON_SONAME,
                   why != nullptr ? why : "unknown error");
      std::abort();
    }
    return h;
  }();
  return handle;
}

// The library's `symbol` (a mangled C++ name); its absence means another simdjson than the one
// moat was built with, which nothing here can work with.
void* real(const char* symbol) {
  void* p = ::dlsym(libsimdjson(), symbol);
  if (p == nullptr) {
    std::fprintf(stderr, "moat: %s has no %s\n", MOAT_SIMDJSON_SONAME, symbol);
    std::abort();
  }
  return p;
}

}  // namespace

namespace simdjson {

// The mangled names of the declarations in simdjson.h: a wrong one ends the first command that
// reads a session (MoatCliTest.MoatStartsWithoutSimdjsonAndOpensItToShowASession).
internal::atomic_ptr<const implementation>& get_active_implementation() {
  using Fn = internal::atomic_ptr<const implementation>& (*)();
  static const auto fn = reinterpret_cast<Fn>(real("_ZN8simdjson25get_active_implementationEv"));
  return fn();
}

}  // namespace simdjson

namespace moat::sessions {

const char* simd_error_message(simdjson::error_code err) {
  static const auto* const table = static_cast<const simdjson::internal::error_code_info*>(
      real("_ZN8simdjson8internal11error_codesE"));
  const int i = static_cast<int>(err);
  if (i < 0 || i >= static_cast<int>(simdjson::NUM_ERROR_CODES)) return "unknown simdjson error";
  return table[i].message;
}

}  // namespace moat::sessions
