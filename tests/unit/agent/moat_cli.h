// tests/unit/agent/moat_cli.h: running the built `moat` binary (MOAT_BIN) from a test.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace moat::testing {

struct CliRun {
  int rc = -1;
  std::string out;
};

// Runs `moat <args>` (stdout and stderr together); args are test-made paths and ids.
inline CliRun moat(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(std::getenv("MOAT_BIN")) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace moat::testing
