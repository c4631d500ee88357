// base/check.h: MOAT_CHECK, for broken invariants (bugs), which abort.
#pragma once

#include <cstdio>
#include <cstdlib>

#define MOAT_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)
