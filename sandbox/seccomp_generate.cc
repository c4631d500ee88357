// sandbox/seccomp_generate.cc: the build step that compiles the seccomp programs with libseccomp
// (seccomp_policy.h) and writes them out as C++ arrays: the generated
// seccomp_programs_embedded.cc, which defines seccomp_programs.h's session_filter and
// exec_watch_filter. It runs on the build machine (sandbox/meson.build).
// Usage: seccomp_generate <output.cc>
#include <linux/filter.h>
#include <seccomp.h>

#include <cstdio>
#include <string>
#include <vector>

#include "sandbox/seccomp_policy.h"

namespace {

using moat::Result;
using Insns = std::vector<sock_filter>;

// Each program the workers install, under the name of its array.
struct Program {
  const char* array;
  Result<Insns> (*compile)();
};
const Program kPrograms[] = {
    {"kSessionFilter", [] { return moat::sandbox::compile_filter(false); }},
    {"kSessionFilterNetwork", [] { return moat::sandbox::compile_filter(true); }},
    {"kExecWatchFilter", moat::sandbox::compile_exec_watch_filter},
};

std::string array_text(const char* name, const Insns& insns) {
  std::string out = std::string("constexpr sock_filter ") + name + "[] = {\n";
  char line[64];
  for (const sock_filter& f : insns) {
    std::snprintf(line, sizeof line, "    {0x%04x, %u, %u, 0x%08x},\n", unsigned{f.code},
                  unsigned{f.jt}, unsigned{f.jf}, unsigned{f.k});
    out += line;
  }
  // A longer program is one seccomp(2) refuses (EINVAL): the build fails instead of every worker.
  return out + "};\nstatic_assert(sizeof " + name + " / sizeof(sock_filter) <= BPF_MAXINSNS);\n";
}

Result<std::string> source_text() {
  const scmp_version* v = seccomp_version();
  std::string out =
      "// The programs of sandbox/seccomp_programs.h, generated when moat was built by\n"
      "// sandbox/seccomp_generate.cc with libseccomp " +
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro) +
      ": do not edit.\n"
      "#include \"sandbox/seccomp_programs.h\"\n\n"
      "namespace moat::sandbox {\nnamespace {\n\n";
  for (const Program& p : kPrograms) {
    auto insns = p.compile();
    if (!insns) return moat::fail(insns.error().with_context(p.array));
    out += array_text(p.array, *insns) + "\n";
  }
  return out +
         "constexpr BpfProgram kSessionFilters[] = {{kSessionFilter}, {kSessionFilterNetwork}};\n"
         "constexpr BpfProgram kExecWatch{kExecWatchFilter};\n\n"
         "}  // namespace\n\n"
         "const BpfProgram& session_filter(bool network) { return kSessionFilters[network ? 1 : "
         "0]; }\n"
         "const BpfProgram& exec_watch_filter() { return kExecWatch; }\n\n"
         "}  // namespace moat::sandbox\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: seccomp_generate <output.cc>\n");
    return 2;
  }
  auto text = source_text();
  if (!text) {
    std::fprintf(stderr, "seccomp_generate: %s\n", text.error().message().c_str());
    return 1;
  }
  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  const bool written = std::fwrite(text->data(), 1, text->size(), out) == text->size();
  if (std::fclose(out) != 0 || !written) {
    std::perror(argv[1]);
    std::remove(argv[1]);  // no half a program for the next build to compile
    return 1;
  }
  return 0;
}
