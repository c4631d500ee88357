// tests/integration/e2e/run_config_test.cc: what `moat run` does with a broken config.toml
// and an unreachable provider (issue 16, item 7): a config error names file:line:col, the
// key and what is accepted, and exits 2 before anything starts; a provider that refuses the
// connection fails at once instead of retrying for 13 s.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/unique_fd.h"
#include "e2e_support.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

class RunConfigTest : public WorkspaceTest {
 protected:
  std::string config_file() const { return dir_.path() + "/config/moat/config.toml"; }
  void write_config(const std::string& text) const {
    fs::create_directories(dir_.path() + "/config/moat");
    std::ofstream(config_file()) << text;
  }
  e2e::SplitRun moat_run(const std::string& model, const std::string& extra = "") const {
    std::vector<std::string> argv = {moat_bin(), "run", "--headless", "--model", model, "-C", ws_};
    for (const std::string kept : {"sessions", "audit"})  // under dir_, to see what was made
      argv.insert(argv.end(), {"--" + kept + "-dir", dir_.path() + "/" + kept});
    if (!extra.empty()) argv.push_back(extra);
    argv.push_back("write the file");
    return run_split(argv, env(), 120);
  }
};

TEST_F(RunConfigTest, AnErrorInConfigTomlNamesFileLineColumnAndExitsTwoBeforeAnythingStarts) {
  const std::string script = dir_.path() + "/s.jsonl";
  std::ofstream(script)
      << R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo ran > ran.txt"}}]})"
      << "\n"
      << R"({"text":"done"})"
      << "\n";
  // An unknown key on line 3, with a replay model that never needs the file.
  write_config("[providers.corp]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-typo\"\n");
  e2e::SplitRun r = moat_run("replay:" + script);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(config_file() + ":3:1: providers.corp.api_key: unknown key; accepted keys "
                                       "here: kind, base_url, api_key_env"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(ws_ + "/ran.txt")) << "the run started";
  EXPECT_FALSE(fs::exists(dir_.path() + "/sessions")) << "a session was written";
  EXPECT_FALSE(fs::exists(dir_.path() + "/audit")) << "moatd was started";
  EXPECT_EQ(r.out, "");

  // A value of the wrong type: its own line and column, and what would be accepted.
  write_config(
      "[providers.corp]\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[[models]]\nprovider = "
      "\"corp\"\nid = \"m\"\ncontext_window = \"big\"\n");
  r = moat_run("corp/m");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(config_file() + ":7:18: models[0].context_window: expected an integer"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() + "/audit")) << "moatd was started";
}

// A local port that refuses connections: bound, never listening.
struct RefusingPort {
  UniqueFd fd;
  int port = 0;
};
RefusingPort refusing_port() {
  RefusingPort p{UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), 0};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(p.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(p.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    p.port = ntohs(addr.sin_port);
  return p;
}

TEST_F(RunConfigTest, AProviderThatRefusesTheConnectionFailsAtOnceWithoutRetrying) {
  const RefusingPort port = refusing_port();
  ASSERT_NE(port.port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port.port) + "/v1";
  write_config("[providers.local]\nkind = \"openai-chat\"\nbase_url = \"" + url +
               "\"\napi_key_env = \"\"\nlocal = true\n");
  const e2e::SplitRun r = moat_run("local/some-model", "--json");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  int retries = 0, errors = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded()) continue;
    retries += e.value("type", "") == "retry";
    if (e.value("type", "") == "error") {
      ++errors;
      EXPECT_NE(e.dump().find("refused"), std::string::npos) << e.dump();
      EXPECT_NE(e.dump().find(url), std::string::npos) << e.dump();
    }
  }
  EXPECT_EQ(retries, 0) << "a refused connection was retried:\n" << r.out;
  EXPECT_EQ(errors, 1) << r.out;
  // In text mode the message is on stderr, and stdout stays empty.
  const e2e::SplitRun text = moat_run("local/some-model", "-p");
  EXPECT_EQ(text.exit_code, 4) << text.err;
  EXPECT_NE(text.err.find("refused: nothing listens there"), std::string::npos) << text.err;
  EXPECT_EQ(text.err.find("retry"), std::string::npos) << text.err;
  EXPECT_EQ(text.out, "");
}

// Issue 27 item 15: --model was required on every run. config.toml's default_model names the
// model a run without one uses; with neither, the error names both ways to give one.
TEST_F(RunConfigTest, DefaultModelInConfigTomlIsUsedWithoutModelAndItsAbsenceNamesBoth) {
  const std::string script = dir_.path() + "/s.jsonl";
  std::ofstream(script)
      << R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo ran > ran.txt"}}]})"
      << "\n"
      << R"({"text":"done"})"
      << "\n";
  const std::vector<std::string> argv = {moat_bin(),      "run", "--headless", "-C", ws_,
                                         "--sessions-dir", dir_.path() + "/sessions",
                                         "--audit-dir",    dir_.path() + "/audit",
                                         "write the file"};
  write_config("default_model = \"replay:" + script + "\"\n");
  e2e::SplitRun r = run_split(argv, env(), 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(ws_ + "/ran.txt"), "ran\n") << r.err;

  fs::remove(ws_ + "/ran.txt");
  write_config("");
  r = run_split(argv, env(), 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("default_model in " + config_file()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ws_ + "/ran.txt"));

  // A default_model that is not a string is a config error like any other.
  write_config("default_model = 3\n");
  r = run_split(argv, env(), 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(config_file() + ":1:17: default_model"), std::string::npos) << r.err;
}

// Issue 27 item 15: CLI11 checked required options before unknown ones, so `--modle` was
// reported as "--model is required".
TEST(MoatRunUsage, ATypoedFlagIsNamedAsAnUnknownOption) {
  const e2e::SplitRun r =
      run_split({moat_bin(), "run", "--headless", "--modle", "replay:x", "a task"}, {}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown option --modle"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("required"), std::string::npos) << r.err;
}

// Issue 27 item 15: CLI::NonNegativeNumber printed its upper bound, the largest double, in
// full (a 309-digit number).
TEST(MoatRunUsage, ABadNumberSaysWhatIsAcceptedInFewWords) {
  struct Case {
    std::string flag, value, says;
  };
  for (const Case& c : {Case{"--max-turns", "-1", "-1 is not a whole number from 0 to 2147483647"},
                        Case{"--max-tokens", "99999999999999999999999",
                             "is not a whole number from 0 to 18446744073709551615"},
                        Case{"--max-cost", "-0.5", "-0.5 is not a number, 0 or more"},
                        Case{"--max-wall", "soon", "soon is not a number, 0 or more"}}) {
    SCOPED_TRACE(c.flag + " " + c.value);
    const e2e::SplitRun r =
        run_split({moat_bin(), "run", "-m", "replay:x", c.flag, c.value, "a task"}, {}, 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.flag + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;
  }
}

}  // namespace
}  // namespace moat::e2e
