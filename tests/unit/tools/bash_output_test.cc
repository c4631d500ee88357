// tests/unit/tools/bash_output_test.cc: the rolling buffer gives the same tail and the same
// spill file whatever sizes the output arrives in, and stops exactly at the ceiling.
#include "tools/bash_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/tools/harness.h"

namespace moat::tools {
namespace {

class BashOutputTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_workspace_dir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  BashOutput::Options options(std::uint64_t ceiling = 16ull << 20) {
    BashOutput::Options o;
    o.ceiling = ceiling;
    o.open_spill = [this](std::string* path) -> Result<UniqueFd> {
      *path = dir_ + "/spill-" + std::to_string(spills_++) + ".log";
      const int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return fail(Error::from_errno("open", errno, *path));
      return UniqueFd(fd);
    };
    return o;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  int spills_ = 0;
};

std::string sample_output() {
  std::string s;
  for (int i = 0; i < 3000; ++i)
    s += "output line " + std::to_string(i) + " " + std::string(i % 40, '.') + "\n";
  return s;  // ~150 KB, 3000 lines: over both limits
}

TEST_F(BashOutputTest, EveryChunkSizeGivesTheSameTailAndSpill) {
  const std::string all = sample_output();
  std::string reference;
  for (std::size_t chunk : {1ul, 7ul, 100ul, 4096ul, 65536ul, all.size()}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    std::atomic<bool> kill{false};
    BashOutput out(options(), &kill);
    for (std::size_t i = 0; i < all.size(); i += chunk)
      out.add(std::string_view(all).substr(i, chunk));
    out.finish();
    EXPECT_FALSE(kill);
    EXPECT_EQ(out.total_bytes(), all.size());
    EXPECT_EQ(out.total_lines(), 3000u);
    EXPECT_EQ(slurp(out.spill_path()), all);
    std::string rendered = out.render();
    rendered.replace(rendered.find(out.spill_path()), out.spill_path().size(), "<spill>");
    if (reference.empty()) reference = rendered;
    EXPECT_EQ(rendered, reference);
  }
  const Truncation t = truncate_tail(all);
  EXPECT_EQ(reference.substr(0, t.text.size()), t.text);
}

TEST_F(BashOutputTest, OutputWithinTheLimitsIsNotSpilled) {
  std::atomic<bool> kill{false};
  BashOutput out(options(), &kill);
  out.add("small\n");
  EXPECT_EQ(out.render(), "small\n");
  EXPECT_TRUE(out.spill_path().empty());
}

TEST_F(BashOutputTest, TheCeilingKeepsExactlyThatManyBytesAndAsksForTheKill) {
  const std::string all = sample_output();
  std::atomic<bool> kill{false};
  BashOutput out(options(100000), &kill);
  for (std::size_t i = 0; i < all.size(); i += 999) out.add(std::string_view(all).substr(i, 999));
  EXPECT_TRUE(kill);
  EXPECT_TRUE(out.ceiling_hit());
  EXPECT_EQ(out.total_bytes(), 100000u);
  EXPECT_EQ(slurp(out.spill_path()), all.substr(0, 100000));
}

TEST_F(BashOutputTest, AFailedSpillIsReportedInTheNotice) {
  std::atomic<bool> kill{false};
  BashOutput::Options o;
  o.open_spill = [](std::string* path) -> Result<UniqueFd> {
    *path = "/tmp/unused";
    return fail(Error::from_errno("open", ENOSPC, "/tmp/moat-bash-x.log"));
  };
  BashOutput out(std::move(o), &kill);
  out.add(sample_output());
  EXPECT_NE(out.render().find("The full output could not be saved (open(/tmp/moat-bash-x.log): No "
                              "space left on device)"),
            std::string::npos);
}

}  // namespace
}  // namespace moat::tools
