// tests/unit/sandbox/seccomp_programs_test.cc: the seccomp programs built with moat are the ones
// libseccomp compiles from the table on the machine that runs the tests, byte for byte.
#include "sandbox/seccomp_programs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "sandbox/seccomp_policy.h"

namespace moat::sandbox {
namespace {

// Instruction i as code, jt, jf and k; "(end)" past the program's end.
std::string instruction(std::span<const sock_filter> program, std::size_t i) {
  if (i >= program.size()) return "(end)";
  char text[48];
  std::snprintf(text, sizeof text, "{%04x %u %u %08x}", unsigned{program[i].code},
                unsigned{program[i].jt}, unsigned{program[i].jf}, unsigned{program[i].k});
  return text;
}

// Byte for byte; a failure names the first instruction where the two part.
void expect_same(const BpfProgram& embedded, const Result<std::vector<sock_filter>>& compiled) {
  ASSERT_TRUE(compiled) << compiled.error().message();
  const std::span<const sock_filter> here(*compiled), built = embedded.insns;
  std::size_t i = 0;
  while (i < here.size() && i < built.size() &&
         std::memcmp(&here[i], &built[i], sizeof(sock_filter)) == 0)
    ++i;
  EXPECT_TRUE(i == here.size() && i == built.size())
      << "instruction " << i << " of " << here.size() << ": compiled here " << instruction(here, i)
      << ", built with moat " << instruction(built, i)
      << ". The build did not regenerate the programs after an edit of seccomp_policy.cc or "
         "seccomp_sets.cc (sandbox/meson.build, seccomp_generate), or this machine's libseccomp "
         "compiles the table to another program than the build's";
}

// The programs depend only on the build, which generates them (seccomp_programs.h); moatd and
// the session's init no longer compile them. An edit of the table or of the ordered decisions
// that the build did not regenerate the programs for, or a libseccomp that compiles the table
// to another program, fails here.
TEST(SeccompPrograms, EachEmbeddedProgramIsWhatLibseccompCompilesHere) {
  {
    SCOPED_TRACE("the session's filter without the network");
    expect_same(session_filter(false), compile_filter(false));
  }
  {
    SCOPED_TRACE("the session's filter with the network");
    expect_same(session_filter(true), compile_filter(true));
  }
  {
    SCOPED_TRACE("the exec watch");
    expect_same(exec_watch_filter(), compile_exec_watch_filter());
  }
}

}  // namespace
}  // namespace moat::sandbox
