// base/random.h: bytes and ids from the kernel's random pool (getrandom(2)), the one way moat
// makes unpredictable names (session and decision ids, entry ids, temporary file names).
#pragma once

#include <sys/random.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/hex.h"
#include "base/result.h"

namespace moat {

// getrandom(2)'s shape, so a test can stand in for the kernel.
using RandomSource = ssize_t (*)(void* buf, std::size_t len, unsigned flags);

// How many getrandom calls in a row may return nothing before we give up. It fails only before
// the pool is initialised at early boot (EAGAIN with GRND_NONBLOCK, which we do not pass), on
// a bad buffer (EFAULT) or under seccomp (ENOSYS, EPERM): none of these heals by looping, so an
// unbounded retry would spin forever where an error can be reported.
inline constexpr int kRandomAttempts = 16;

// Fills out[0, n) from `source` (getrandom by default). Short reads continue where they
// stopped; EINTR and other failures are retried up to kRandomAttempts times in all, then
// the last errno is returned.
inline Result<void> random_bytes(void* out, std::size_t n, RandomSource source = ::getrandom) {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t got = 0;
  int failures = 0;
  while (got < n) {
    const ssize_t r = source(p + got, n - got, 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
      continue;
    }
    const int err = r < 0 ? errno : EIO;
    if (++failures >= kRandomAttempts) return fail(Error::from_errno("getrandom", err));
  }
  return {};
}

// 2*bytes lowercase hex characters of fresh randomness.
inline Result<std::string> random_hex(std::size_t bytes, RandomSource source = ::getrandom) {
  std::string buf(bytes, '\0');
  MOAT_TRY(random_bytes(buf.data(), bytes, source));
  return hex_encode(buf);
}

// For callers with no error path (ids inside the session store, temporary names): an id that
// is not random would collide, and a host whose random pool fails is broken, so this aborts,
// naming the error, instead of returning one.
inline void random_bytes_or_abort(void* out, std::size_t n) {
  if (auto r = random_bytes(out, n); !r) {
    std::fprintf(stderr, "moat: no randomness from the kernel: %s\n", r.error().message().c_str());
    std::abort();
  }
}

inline std::string random_hex_or_abort(std::size_t bytes) {
  std::string buf(bytes, '\0');
  random_bytes_or_abort(buf.data(), bytes);
  return hex_encode(buf);
}

}  // namespace moat
