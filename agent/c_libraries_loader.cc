// agent/c_libraries_loader.cc: the libcap, libseccomp and libutf8proc functions the `moat` binary
// calls, loaded on first use.
//
// Each of the three cost every moat start its loading and relocations (about 0.1M instructions
// each; issue 30), and `moat sandbox exec` calls none of them: the privilege drop and the loop's
// filter of `moat run` (agent/unprivileged.cc) use libcap and libseccomp, text width and policy
// normalisation use libutf8proc. This file, linked into `moat` only (moatd and the tests link the
// libraries themselves), defines each function moat calls as a forwarder to the library's own,
// opened the first time one is called, as agent/libcrypto_loader.cc does for libcrypto. With it
// --as-needed leaves the three out of moat's needed libraries; a function used without a
// forwarder here brings its library back, which
// ColdStart.MoatStartsWithoutLibcapLibseccompAndLibutf8proc reports. They are opened by the
// sonames a link would have recorded (MOAT_*_SONAME, read from the libraries at configure time). The loop's own filter allows what dlopen does (open,
// mmap): a library first used after the drop still loads, as the uid the loop runs as.
#include <dlfcn.h>
#include <sys/capability.h>

#include <seccomp.h>
#include <utf8proc.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace {

// `soname`, opened once; a machine without it cannot run moat's commands that need it.
template <const char* kSoname>
void* library() {
  static void* const handle = [] {
    void* h = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      std::fprintf(stderr, "moat: %s could not be loaded: %s\n", kSoname,
                   why != nullptr ? why : "unknown error");
      std::abort();
    }
    return h;
  }();
  return handle;
}

// The library's `name`, typed as moat's declaration of it (the library's header).
template <const char* kSoname, class Fn>
Fn real(const char* name) {
  void* f = ::dlsym(library<kSoname>(), name);
  if (f == nullptr) {
    std::fprintf(stderr, "moat: %s has no %s\n", kSoname, name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

constexpr char kLibcap[] = MOAT_LIBCAP_SONAME;
constexpr char kLibseccomp[] = MOAT_LIBSECCOMP_SONAME;
constexpr char kLibutf8proc[] = MOAT_LIBUTF8PROC_SONAME;

}  // namespace

// Each forwarder resolves its function once (a thread-safe static) and calls it.
#define MOAT_FORWARD(lib, ret, name, params, args)                      \
  ret name params {                                                     \
    static const auto fn = real<lib, decltype(&::name)>(#name);         \
    return fn args;                                                     \
  }

extern "C" {

MOAT_FORWARD(kLibcap, cap_t, cap_init, (void), ())
MOAT_FORWARD(kLibcap, int, cap_free, (void* p), (p))
MOAT_FORWARD(kLibcap, cap_t, cap_get_proc, (void), ())
MOAT_FORWARD(kLibcap, int, cap_set_proc, (cap_t c), (c))
MOAT_FORWARD(kLibcap, int, cap_compare, (cap_t a, cap_t b), (a, b))

MOAT_FORWARD(kLibseccomp, scmp_filter_ctx, seccomp_init, (uint32_t def_action), (def_action))
MOAT_FORWARD(kLibseccomp, void, seccomp_release, (scmp_filter_ctx ctx), (ctx))
MOAT_FORWARD(kLibseccomp, int, seccomp_load, (const scmp_filter_ctx ctx), (ctx))
MOAT_FORWARD(kLibseccomp, int, seccomp_attr_set,
             (scmp_filter_ctx ctx, enum scmp_filter_attr attr, uint32_t value), (ctx, attr, value))
MOAT_FORWARD(kLibseccomp, int, seccomp_syscall_resolve_name, (const char* name), (name))
MOAT_FORWARD(kLibseccomp, int, seccomp_export_bpf, (const scmp_filter_ctx ctx, int fd), (ctx, fd))
MOAT_FORWARD(kLibseccomp, int, seccomp_rule_add_array,
             (scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt,
              const struct scmp_arg_cmp* arg_array),
             (ctx, action, syscall, arg_cnt, arg_array))

// Variadic: its arg_cnt comparisons (struct scmp_arg_cmp, by value) are gathered into an array
// for seccomp_rule_add_array, as libseccomp's own seccomp_rule_add does; like it, more than a
// system call's six arguments is -EINVAL.
int seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt,
                     ...) {
  constexpr unsigned int kMaxArgs = 6;
  if (arg_cnt > kMaxArgs) return -EINVAL;
  struct scmp_arg_cmp args[kMaxArgs] = {};
  va_list ap;
  va_start(ap, arg_cnt);
  for (unsigned int i = 0; i < arg_cnt; ++i) args[i] = va_arg(ap, struct scmp_arg_cmp);
  va_end(ap);
  return seccomp_rule_add_array(ctx, action, syscall, arg_cnt, args);
}

MOAT_FORWARD(kLibutf8proc, utf8proc_ssize_t, utf8proc_iterate,
             (const utf8proc_uint8_t* str, utf8proc_ssize_t strlen,
              utf8proc_int32_t* codepoint_ref),
             (str, strlen, codepoint_ref))
MOAT_FORWARD(kLibutf8proc, int, utf8proc_charwidth, (utf8proc_int32_t codepoint), (codepoint))
MOAT_FORWARD(kLibutf8proc, utf8proc_ssize_t, utf8proc_map,
             (const utf8proc_uint8_t* str, utf8proc_ssize_t strlen, utf8proc_uint8_t** dstptr,
              utf8proc_option_t options),
             (str, strlen, dstptr, options))
MOAT_FORWARD(kLibutf8proc, utf8proc_uint8_t*, utf8proc_NFC, (const utf8proc_uint8_t* str), (str))

}  // extern "C"
