// tests/unit/sandbox/remote_memory_test.cc: the exec watch reads a caller's argv by pages,
// each page once, within a budget (sandbox/remote_memory.h), read here from this process.
#include "sandbox/remote_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace moat::sandbox {
namespace {

std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// A million-word argv used to cost moatd two reads per word; laid out as programs lay it
// out (words side by side), it is a few hundred pages, each read once.
TEST(RemoteMemory, AnArgvOfManyWordsSideBySideIsReadByThePage) {
  std::string words;
  std::vector<char*> argv;
  for (int i = 0; i < 60000; ++i) words += "w" + std::to_string(i) + '\0';
  for (std::size_t at = 0; at < words.size(); at += std::strlen(&words[at]) + 1)
    argv.push_back(&words[at]);
  argv.push_back(nullptr);
  RemoteMemory mem(getpid());
  Argv a = mem.argv_at(addr_of(argv.data()));
  ASSERT_TRUE(a.ok);
  EXPECT_FALSE(a.truncated);
  ASSERT_EQ(a.words.size(), 60000u);
  EXPECT_EQ(a.words[59999], "w59999");
  EXPECT_LT(mem.pages().size(), words.size() / 4096 + argv.size() * 8 / 4096 + 4);
}

// Each word on a page of its own (one page mapped many times over costs the caller nothing):
// refused as too large once the budget is spent, instead of a read per word.
TEST(RemoteMemory, WordsSpreadOverMorePagesThanTheBudgetAreRefusedAsTooLarge) {
  const std::size_t n = RemoteMemory::kPageBudget + 8;
  void* region =
      mmap(nullptr, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  std::vector<char*> argv;
  for (std::size_t i = 0; i < n; ++i) {
    char* page = static_cast<char*>(region) + i * 4096;
    page[0] = 'x';
    argv.push_back(page);
  }
  argv.push_back(nullptr);
  RemoteMemory mem(getpid());
  Argv a = mem.argv_at(addr_of(argv.data()));
  EXPECT_FALSE(a.ok);
  EXPECT_TRUE(a.truncated);
  EXPECT_TRUE(mem.over_budget());
  EXPECT_LE(mem.pages().size(), RemoteMemory::kPageBudget);
  munmap(region, n * 4096);
}

TEST(RemoteMemory, PagesOfThisProcessAloneAreTrustedAndASharedPageIsNot) {
  std::vector<char> heap(8192, 'a');
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  static_cast<char*>(shared)[0] = 'b';
  const std::uint64_t heap_page = addr_of(heap.data() + 4096) & ~std::uint64_t{4095};
  EXPECT_TRUE(pages_private_anonymous(getpid(), {heap_page}));
  EXPECT_FALSE(pages_private_anonymous(getpid(), {heap_page, addr_of(shared)}));
  munmap(shared, 4096);
}

}  // namespace
}  // namespace moat::sandbox
