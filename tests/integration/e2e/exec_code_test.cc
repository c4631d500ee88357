// tests/integration/e2e/exec_code_test.cc: what an exec runs besides the file it names, judged
// at exec time (issue 26 items 5 and 6): the dynamic loader's variables and options
// (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, ld.so --preload), and a program with no name on disk
// (a memfd, a deleted file), judged as a program in a writable root and recorded by its SHA-256.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string text_of(const json& result) {
  std::string out;
  if (result.contains("content"))
    for (const json& b : result["content"]) out += b.value("text", "");
  return out;
}

class ExecCodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(dir_.path() + "/no-policy");
  }
  // One bash call in a fresh session of a moatd whose system layer is `policy`.
  json call_with(const std::string& policy, const std::string& command) {
    return one_headless_call(dir_.path(), ws_, source_root() + "/tests/integration/e2e/" + policy,
                             command, &log_);
  }
  std::vector<json> records(const std::string& type) {
    std::vector<json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      json rec = json::parse(line, nullptr, false);
      if (rec.is_object() && rec.value("type", "") == type) out.push_back(std::move(rec));
    }
    return out;
  }
  // The exec record of the program whose argv[0] is `argv0`.
  json exec_of(const std::string& argv0) {
    for (const json& e : records("exec"))
      if (e.contains("argv") && e["argv"].is_array() && !e["argv"].empty() &&
          e["argv"][0] == argv0)
        return e;
    return json();
  }
  // evil.so in the workspace: its constructor leaves a file named after the program it runs in.
  void build_evil_library() {
    std::ofstream(ws_ + "/evil.c")
        << "#include <fcntl.h>\n#include <unistd.h>\n"
           "__attribute__((constructor)) static void evil(void) {\n"
           "  int fd = open(\"pwned\", O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd); }\n";
    const e2e::Run cc = run({"cc", "-shared", "-fPIC", "-o", ws_ + "/evil.so", ws_ + "/evil.c"});
    ASSERT_EQ(cc.exit_code, 0) << cc.out;
    if (getuid() == 0) (void)!chown(ws_.c_str(), 65534, 65534);  // harmless: tests own it
  }
  std::string loader() {
    for (const char* l : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
      if (fs::exists(l)) return l;
    return "";
  }
  // Each attack runs from a script, so the model's line (`sh ./attack.sh`) holds no variable.
  void write_attacks() {
    std::ofstream(ws_ + "/preload.sh") << "LD_PRELOAD=./evil.so /usr/bin/true; echo preload=$?\n";
    std::ofstream(ws_ + "/audit.sh") << "LD_AUDIT=./evil.so /usr/bin/true; echo audit=$?\n";
    std::ofstream(ws_ + "/option.sh")
        << loader() << " --preload ./evil.so /usr/bin/true; echo option=$?\n";
  }

  TempDir dir_;
  std::string ws_, log_;
};

// Item 5: LD_PRELOAD from a script, and the loader's --preload, ran evil.so's code, recorded as
// /usr/bin/true with no environment. An organisation refusing exec-time asks headless refuses
// both (and LD_AUDIT): evil.so never runs.
TEST_F(ExecCodeTest, TheLoadersVariablesAndOptionsAreRefusedWhereExecTimeAsksAre) {
  ASSERT_FALSE(loader().empty()) << "no dynamic loader found";
  build_evil_library();
  write_attacks();
  for (const char* attack : {"preload", "audit", "option"}) {
    SCOPED_TRACE(attack);
    fs::remove(ws_ + "/pwned");
    const json r = call_with("exec_strict_policy", std::string("sh ./") + attack + ".sh");
    const std::string text = text_of(r);
    EXPECT_TRUE(has(text, std::string(attack) + "=126")) << text;
    EXPECT_FALSE(fs::exists(ws_ + "/pwned")) << "evil.so ran: " << text;
    EXPECT_TRUE(has(text, "builtin.code-env")) << text;
    const json e = exec_of(std::string(attack) == "option" ? loader() : "/usr/bin/true");
    ASSERT_TRUE(e.is_object()) << read_file(log_);
    EXPECT_EQ(e.value("result", ""), "deny") << e.dump();
    ASSERT_TRUE(e["rule"].is_object()) << e.dump();
    EXPECT_EQ(e["rule"].value("id", ""), "builtin.code-env") << e.dump();
  }
}

// Item 5, the default: the loader's variables run (an exec-time ask headless), flagged, and the
// exec record names the variable or option that brings the code in.
TEST_F(ExecCodeTest, TheLoadersVariablesAndOptionsRunFlaggedAndAreRecordedByDefault) {
  ASSERT_FALSE(loader().empty()) << "no dynamic loader found";
  build_evil_library();
  write_attacks();
  const struct {
    const char* attack;
    const char* recorded;
  } cases[] = {{"preload", "LD_PRELOAD"}, {"audit", "LD_AUDIT"}, {"option", "--preload"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attack);
    const json r = call_with("exec_watch_policy", std::string("sh ./") + c.attack + ".sh");
    const std::string text = text_of(r);
    EXPECT_TRUE(has(text, std::string(c.attack) + "=0")) << text;
    EXPECT_TRUE(has(text, "moat let 1 program")) << text;
    EXPECT_TRUE(has(text, "builtin.code-env")) << text;
    const json e = exec_of(std::string(c.attack) == "option" ? loader() : "/usr/bin/true");
    ASSERT_TRUE(e.is_object()) << read_file(log_);
    EXPECT_EQ(e.value("flagged", ""), "builtin.code-env") << e.dump();
    ASSERT_TRUE(e.contains("loads")) << e.dump();
    EXPECT_TRUE(has(e["loads"].dump(), c.recorded)) << e.dump();
    EXPECT_TRUE(has(e.value("reason", ""), c.recorded)) << e.dump();
  }
  const e2e::Run v = run({moat_bin(), "audit", "verify", log_});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

// Item 5's other side: a variable of the table that names only system directories changes
// nothing (LD_LIBRARY_PATH=/usr/lib), and the environment moat starts a call with is not flagged.
TEST_F(ExecCodeTest, ALibraryPathOfSystemDirectoriesIsNotFlagged) {
  const json r = call_with("exec_strict_policy",
                           "sh -c 'LD_LIBRARY_PATH=/usr/lib:/lib /usr/bin/true; echo lib=$?'");
  const std::string text = text_of(r);
  EXPECT_TRUE(has(text, "lib=0")) << text;
  EXPECT_FALSE(has(text, "moat let")) << text;
  EXPECT_FALSE(has(text, "moat refused")) << text;
}

// A memfd holding /usr/bin/true's bytes, exec'd by its /proc/self/fd path (as the issue's
// attack did) and by fexecve (execveat with AT_EMPTY_PATH).
constexpr const char* kMemfdExec =
    "python3 -c 'import os, sys\n"
    "fd = os.memfd_create(\"innocent\", 0)\n"
    "os.write(fd, open(\"/usr/bin/true\", \"rb\").read())\n"
    "try:\n"
    "    os.execve(fd if sys.argv[1] == \"fexecve\" else \"/proc/self/fd/%d\" % fd,\n"
    "              [\"innocent\"], dict(os.environ))\n"
    "except OSError as e:\n"
    "    print(\"memfd refused:\", e.errno); sys.exit(3)\n"
    "' ";
// A copy of /usr/bin/true in the sandbox's /tmp, opened and then deleted before its exec.
constexpr const char* kDeletedExec =
    "cp /usr/bin/true /tmp/t && exec 3</tmp/t && rm /tmp/t && /dev/fd/3; echo deleted=$?";

// Item 6: a memfd exec ran bytes an organisation refuses from a file in a writable root
// (/proc/self/fd/3 -> /memfd:innocent (deleted), allowed, no rule). A program with no name on
// disk is judged as a program in a writable root.
TEST_F(ExecCodeTest, AProgramWithNoNameOnDiskIsRefusedWhereWorkspaceProgramsAre) {
  for (const char* how : {"path", "fexecve"}) {
    SCOPED_TRACE(how);
    const std::string text =
        text_of(call_with("exec_strict_policy", kMemfdExec + std::string(how) + "; echo memfd=$?"));
    EXPECT_TRUE(has(text, "memfd refused: 1")) << text;  // EPERM
    EXPECT_TRUE(has(text, "memfd=3")) << text;
    EXPECT_TRUE(has(text, "workspace_programs")) << text;
  }
  const std::string text = text_of(call_with("exec_strict_policy", kDeletedExec));
  EXPECT_TRUE(has(text, "deleted=126")) << text;
  EXPECT_TRUE(has(text, "workspace_programs")) << text;
}

// Item 6, the default: they run, and the record holds the SHA-256 of the bytes that ran.
TEST_F(ExecCodeTest, AProgramWithNoNameOnDiskRunsByDefaultRecordedWithItsSha256) {
  const e2e::Run sum = run({"sha256sum", "/usr/bin/true"});
  const std::string want = sum.out.substr(0, 64);
  std::string text =
      text_of(call_with("exec_watch_policy", kMemfdExec + std::string("path; echo memfd=$?")));
  EXPECT_TRUE(has(text, "memfd=0")) << text;
  json e = exec_of("innocent");
  ASSERT_TRUE(e.is_object()) << read_file(log_);
  EXPECT_EQ(e.value("sha256", ""), want) << e.dump();
  EXPECT_EQ(e.value("result", ""), "allow") << e.dump();
  text = text_of(call_with("exec_watch_policy", kDeletedExec));
  EXPECT_TRUE(has(text, "deleted=0")) << text;
  e = exec_of("/dev/fd/3");
  ASSERT_TRUE(e.is_object()) << read_file(log_);
  EXPECT_EQ(e.value("sha256", ""), want) << e.dump();
}

}  // namespace
}  // namespace moat::e2e
