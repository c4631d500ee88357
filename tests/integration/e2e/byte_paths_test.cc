// tests/integration/e2e/byte_paths_test.cc: host paths that are not UTF-8, through the real
// moatd and moat binaries. What moatd judges is what the sandbox's worker does: a canonical
// path crosses the JSON channels between them with its exact bytes, never with U+FFFD in
// place of a byte; and moat's JSON output carries such bytes instead of crashing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/base64.h"
#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kReplacement = "\xef\xbf\xbd";  // U+FFFD, what a lossy dump writes

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class BytePathsTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    start_moatd(default_policy_flags());
    client_ = std::make_unique<RawClient>(socket_);
    client_->send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    welcome_ = client_->read_frame();
    ASSERT_EQ(welcome_.value("type", ""), "welcome") << welcome_.dump() << moatd_log();
  }
  void TearDown() override {
    client_.reset();
    MoatdProcess::TearDown();
  }
  json call(const std::string& tool, const json& args) {
    client_->send_json({{"type", "call"},
                        {"id", "c" + std::to_string(++calls_)},
                        {"tool", tool},
                        {"arguments", args}});
    return client_->read_result();
  }
  static std::string text_of(const json& result) {
    return result.contains("content") ? result["content"][0].value("text", "") : result.dump();
  }
  // What sandboxed code plants: a directory whose name is the byte 0xff, and `link` to it.
  void plant_link_to_non_utf8_directory() {
    json r = call(
        "bash",
        {{"command", "mkdir $'\\xff' && ln -s $'\\xff' link && echo inside > $'\\xff'/in.txt"}});
    ASSERT_FALSE(r.value("isError", true)) << r.dump();
    ASSERT_TRUE(fs::is_regular_file(ws_ + "/\xff/in.txt"));
  }
  // Every path a decision record of this session judged, decoded from {"bytes": base64}.
  std::vector<std::string> judged_paths() {
    std::vector<std::string> out;
    std::ifstream in(welcome_.value("audit", ""));
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (!r.is_object() || r.value("type", "") != "decision" || !r.contains("input")) continue;
      const json& p = r["input"].value("path", json());
      if (p.is_string()) out.push_back(p.get<std::string>());
      if (p.is_object() && p.contains("bytes"))
        out.push_back(base64_decode(p["bytes"].get<std::string>()));
    }
    return out;
  }

  std::unique_ptr<RawClient> client_;
  json welcome_;
  int calls_ = 0;
};

// The canonical path of `link/out.txt` is ws/<0xff>/out.txt. It used to come back from the
// worker's resolve with U+FFFD for the byte: moatd judged ws/<U+FFFD>/out.txt and the worker
// wrote there, a path that was never the one the model named.
TEST_F(BytePathsTest, AWriteThroughALinkIntoANonUtf8DirectoryIsJudgedAndDoneOnTheSamePath) {
  plant_link_to_non_utf8_directory();
  json r = call("write", {{"path", "link/out.txt"}, {"content", "written\n"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  const std::string real = ws_ + "/\xff/out.txt";
  EXPECT_EQ(read_all(real), "written\n") << "the write did not land where the link leads";
  EXPECT_FALSE(fs::exists(ws_ + "/" + kReplacement)) << "a directory named U+FFFD was written";
  const auto judged = judged_paths();
  EXPECT_NE(std::find(judged.begin(), judged.end(), real), judged.end())
      << "no decision judged the path that was written";
  for (const std::string& p : judged) EXPECT_EQ(p.find(kReplacement), std::string::npos) << p;
}

// The same for the tools that read: each reaches the file the link leads to, and the paths
// they print back (display text for the model) are never what the next call acts on.
TEST_F(BytePathsTest, ReadEditAndListThroughALinkIntoANonUtf8DirectoryReachTheRealFile) {
  plant_link_to_non_utf8_directory();
  json r = call("read", {{"path", "link/in.txt"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_NE(text_of(r).find("inside"), std::string::npos) << r.dump();
  r = call("edit", {{"path", "link/in.txt"}, {"oldText", "inside"}, {"newText", "edited"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_EQ(read_all(ws_ + "/\xff/in.txt"), "edited\n");
  r = call("ls", {{"path", "link"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_NE(text_of(r).find("in.txt"), std::string::npos) << r.dump();
  r = call("find", {{"pattern", "*.txt"}, {"path", "link"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_NE(text_of(r).find("in.txt"), std::string::npos) << r.dump();
  r = call("grep", {{"pattern", "edited"}, {"path", "link"}});
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_NE(text_of(r).find("edited"), std::string::npos) << r.dump();
  for (const std::string& p : judged_paths())
    EXPECT_EQ(p.find(kReplacement), std::string::npos) << p;
}

// moatd's protocol is JSON text. A workspace named with the byte 0xff used to reach moatd with
// U+FFFD in its place: moatd opened another directory (here one named U+FFFD, which exists)
// and ran the command there. The client refuses, naming the path with \xNN; nothing runs.
TEST_F(BytePathsTest, AWorkspaceThatIsNotUtf8IsRefusedByTheClientNotRenamed) {
  const std::string named = dir_.path() + "/\xff", other = dir_.path() + "/" + kReplacement;
  fs::create_directories(named);
  fs::create_directories(other);
  e2e::Run r =
      run({moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", named, "--", "touch", "ran"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(other + "/ran")) << "the command ran in a workspace nobody named";
  EXPECT_FALSE(fs::exists(named + "/ran"));
  EXPECT_NE(r.out.find("workspace '" + dir_.path() + "/\\xff' is not UTF-8"), std::string::npos)
      << r.out;
  // An argv word is the same: `touch <0xff>` is refused, not run as `touch <U+FFFD>`.
  r = run({moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", ws_, "--", "touch", "\xff"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(ws_ + "/" + kReplacement)) << "the command ran on a word nobody typed";
  EXPECT_NE(r.out.find("is not UTF-8"), std::string::npos) << r.out;
}

// `moat policy explain --json` on a command whose shell word is the byte 0xff ended in an
// uncaught nlohmann type_error 316; the word is written as {"bytes": base64} instead.
TEST(MoatJsonOutput, PolicyExplainJsonCarriesANonUtf8WordAsBytes) {
  TempDir dir;
  fs::create_directories(dir.path() + "/no-policy");
  e2e::Run r = run({moat_bin(), "policy", "explain", "--json", "--system-policy-dir",
                    dir.path() + "/no-policy", "--user-policy-dir", dir.path() + "/no-policy",
                    "--workspace", dir.path(), "echo $'\\xff'"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.contains("units") && !j["units"].empty()) << r.out;
  EXPECT_EQ(j["units"][0]["argv"], json({{"bytes", base64_encode("echo \xff")}})) << r.out;
}

}  // namespace
}  // namespace moat::e2e
