// tests/unit/sessions/store_test.cc: SessionStore: format, append, branch, recovery.
#include "sessions/store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include <gtest/gtest.h>

#include "sessions/context.h"
#include "sessions/json_util.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using testing::slurp;
using testing::spit;
using testing::TempDir;

Entry user_message(const std::string& text) {
  return {{"type", "message"},
          {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", text}}}}}}};
}

std::unique_ptr<SessionStore> make_store(const TempDir& dir, int n_entries) {
  auto store = SessionStore::create(dir.path(), "/home/dev/repo");
  EXPECT_TRUE(store.has_value()) << store.error().message();
  for (int i = 0; i < n_entries; ++i)
    EXPECT_TRUE((*store)->append(user_message("turn " + std::to_string(i))).has_value());
  EXPECT_TRUE((*store)->sync().has_value());
  return std::move(*store);
}

TEST(SessionStore, CreateWritesHeaderWithVersionIdAndWorkspace) {
  TempDir dir;
  auto store = make_store(dir, 0);
  const std::string data = slurp(store->path());
  const Entry header = parse_json(data.substr(0, data.find('\n')));
  EXPECT_EQ(str_field(header, "type"), "session");
  EXPECT_EQ(int_field(header, "version"), kSessionFormatVersion);
  EXPECT_EQ(str_field(header, "id"), store->id());
  EXPECT_EQ(str_field(header, "workspace"), "/home/dev/repo");
  EXPECT_TRUE(header["parentSession"].is_null());
  EXPECT_FALSE(str_field(header, "timestamp").empty());
  EXPECT_EQ(store->path().rfind(dir.path() + "/" + workspace_slug("/home/dev/repo") + "/", 0), 0u);
}

TEST(SessionStore, FileIsOwnerOnly) {
  TempDir dir;
  auto store = make_store(dir, 1);
  struct stat st {};
  ASSERT_EQ(::stat(store->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(SessionStore, AppendFillsIdParentAndTimestampAndMovesTheLeaf) {
  TempDir dir;
  auto store = make_store(dir, 0);
  auto a = store->append(user_message("a"));
  auto b = store->append(user_message("b"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(store->leaf(), *b);
  const Entry& eb = store->entries()[1];
  EXPECT_EQ(str_field(eb, "id"), *b);
  EXPECT_EQ(str_field(eb, "parentId"), *a);
  EXPECT_TRUE(store->entries()[0]["parentId"].is_null());
  EXPECT_FALSE(str_field(eb, "timestamp").empty());
}

TEST(SessionStore, EveryAppendIsOneWholeLineOnDisk) {
  TempDir dir;
  auto store = make_store(dir, 3);
  const std::string data = slurp(store->path());
  EXPECT_EQ(std::count(data.begin(), data.end(), '\n'), 4);
  EXPECT_EQ(data.back(), '\n');
}

TEST(SessionStore, ReopenRestoresEntriesAndNewestLeaf) {
  TempDir dir;
  std::string path, leaf;
  {
    auto store = make_store(dir, 4);
    path = store->path();
    leaf = store->leaf();
  }
  auto again = SessionStore::open(path);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ((*again)->entries().size(), 4u);
  EXPECT_EQ((*again)->leaf(), leaf);
  EXPECT_EQ((*again)->path_to_leaf().size(), 4u);
}

TEST(SessionStore, UnknownEntryTypeIsRefused) {
  TempDir dir;
  auto store = make_store(dir, 0);
  EXPECT_FALSE(store->append(Entry{{"type", "shell"}}).has_value());
  EXPECT_FALSE(store->append(Entry::array()).has_value());
  EXPECT_TRUE(store->entries().empty());
}

TEST(SessionStore, SetLeafBranchesAndPathFollowsTheBranch) {
  TempDir dir;
  auto store = make_store(dir, 0);
  auto a = store->append(user_message("a"));
  auto b = store->append(user_message("b"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(store->set_leaf(*a).has_value());
  auto c = store->append(user_message("c"));
  ASSERT_TRUE(c.has_value());
  const auto path = store->path_to_leaf();
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(str_field(path[0], "id"), *a);
  EXPECT_EQ(str_field(path[1], "id"), *c);
  EXPECT_EQ(store->path_to(*b).size(), 2u);
  EXPECT_EQ(store->set_leaf("nope").error().code, ENOENT);
}

TEST(SessionStore, SetLeafToRootStartsANewTree) {
  TempDir dir;
  auto store = make_store(dir, 2);
  ASSERT_TRUE(store->set_leaf("").has_value());
  ASSERT_TRUE(store->append(user_message("fresh")).has_value());
  EXPECT_EQ(store->path_to_leaf().size(), 1u);
}

TEST(SessionStore, SecondWriterIsRefusedWithEwouldblock) {
  TempDir dir;
  auto store = make_store(dir, 1);
  auto second = SessionStore::open(store->path());
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, EWOULDBLOCK);
  EXPECT_TRUE(SessionStore::open_read_only(store->path()).has_value());
}

TEST(SessionStore, ReadOnlyStoreRefusesAppendWithEbadf) {
  TempDir dir;
  auto store = make_store(dir, 1);
  auto ro = SessionStore::open_read_only(store->path());
  ASSERT_TRUE(ro);
  EXPECT_EQ((*ro)->append(user_message("x")).error().code, EBADF);
}

TEST(SessionStore, NewerFormatVersionIsRefusedAndTheFileLeftUntouched) {
  TempDir dir;
  const std::string path = dir.path() + "/future.jsonl";
  const std::string data =
      "{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\"}\n{"
      "\"tor";
  spit(path, data);
  auto store = SessionStore::open(path);
  ASSERT_FALSE(store.has_value());
  EXPECT_NE(store.error().message().find("version 2 is newer"), std::string::npos)
      << store.error().message();
  EXPECT_EQ(slurp(path), data);  // not even the torn tail was cut
}

TEST(SessionStore, CorruptMiddleLineIsAnErrorNamingTheLine) {
  TempDir dir;
  auto store = make_store(dir, 3);
  std::string data = slurp(store->path());
  const size_t second_entry = data.find('\n', data.find('\n') + 1) + 1;
  data[second_entry] = '#';
  const std::string path = dir.path() + "/corrupt.jsonl";
  spit(path, data);
  auto loaded = SessionStore::open_read_only(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().message().find(":3 (byte " + std::to_string(second_entry) + ")"),
            std::string::npos)
      << loaded.error().message();
}

// Each way a line can be damaged is refused at open, naming the file, the line and its byte.
TEST(SessionStore, EveryKindOfDamagedLineIsAnErrorNamingTheLine) {
  TempDir dir;
  auto store = make_store(dir, 2);
  const std::string data = slurp(store->path());
  const size_t second = data.find('\n', data.find('\n') + 1) + 1;  // line 3
  const std::string first_id = str_field(store->entries()[0], "id");
  const std::pair<std::string, std::string> cases[] = {
      {"[1,2]", "not a JSON object"},
      {"{\"type\":\"message\",\"id\":\"x\",\"text\":\"\xff\"}", "not valid JSON"},
      {"{\"type\":\"message\",\"id\":\"x\",", "not valid JSON"},
      {"{\"type\":\"message\",\"id\":\"me\",\"parentId\":\"me\"}", "is not an earlier entry"},
      {"{\"type\":\"message\",\"id\":\"" + first_id + "\"}", "duplicate id"},
      {"{\"type\":\"message\",\"parentId\":null}", "entry without an id"},
  };
  for (const auto& [line, says] : cases) {
    SCOPED_TRACE(line);
    const std::string path = dir.path() + "/damaged.jsonl";
    spit(path, data.substr(0, second) + line + "\n" + data.substr(data.find('\n', second) + 1));
    auto loaded = SessionStore::open_read_only(path);
    ASSERT_FALSE(loaded.has_value());
    const std::string& message = loaded.error().message();
    EXPECT_EQ(message.rfind(path + ":3 (byte " + std::to_string(second) + "): ", 0), 0u) << message;
    EXPECT_NE(message.find(says), std::string::npos) << message;
  }
}

// The loop rebuilds the context before every request: it must refer to the store's parsed
// entries, not copy them (issue 19: a 100,000-entry session paid a full copy per turn).
TEST(SessionStore, AContextRefersToTheStoresEntriesAndRebuildingItCopiesNothing) {
  TempDir dir;
  const std::string path = make_store(dir, 5)->path();
  auto store = SessionStore::open_read_only(path);
  ASSERT_TRUE(store.has_value()) << store.error().message();
  const SessionContext first = build_context(**store);
  const SessionContext second = build_context(**store);
  ASSERT_EQ(first.messages.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(&first.messages[i], (*store)->entry_message(i));
    EXPECT_EQ(&second.messages[i], &first.messages[i]);
    EXPECT_EQ(first.messages[i], (*store)->entries()[i]["message"]);
  }
  // An append moves nothing the context refers to.
  auto writable = SessionStore::open(path);
  ASSERT_TRUE(writable.has_value()) << writable.error().message();
  const SessionContext before = build_context(**writable);
  const Message* oldest = &before.messages[0];
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*writable)->append(user_message("more")).has_value());
  EXPECT_EQ(&build_context(**writable).messages[0], oldest);
  EXPECT_EQ(str_field((*oldest)["content"][0], "text"), "turn 0");
}

// ninja BuildLogTest.Truncate: every cut keeps exactly the whole lines before it.
TEST(SessionStore, AnyTruncationKeepsEveryWholeLineBeforeIt) {
  TempDir dir;
  auto store = make_store(dir, 4);
  const std::string full = slurp(store->path());
  const std::vector<Entry> original = store->entries();
  const size_t header_end = full.find('\n') + 1;
  const std::string path = dir.path() + "/cut.jsonl";
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    spit(path, full.substr(0, cut));
    auto loaded = SessionStore::open(path);
    if (cut < header_end) {
      EXPECT_FALSE(loaded.has_value());
      continue;
    }
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message();
    const size_t whole = static_cast<size_t>(std::count(full.begin(), full.begin() + cut, '\n'));
    ASSERT_EQ((*loaded)->entries().size(), whole - 1);
    for (size_t i = 0; i + 1 < whole; ++i) EXPECT_EQ((*loaded)->entries()[i], original[i]);
    // A crash mid-append leaves a store that takes new appends and reloads consistently.
    ASSERT_TRUE((*loaded)->append(user_message("after crash")).has_value());
    loaded->reset();
    auto reloaded = SessionStore::open_read_only(path);
    ASSERT_TRUE(reloaded.has_value()) << reloaded.error().message();
    EXPECT_EQ((*reloaded)->entries().size(), whole);
    EXPECT_EQ((*reloaded)->dropped_torn_bytes(), 0u);
  }
}

TEST(SessionStore, ReadOnlyOpenOfATornFileReportsTheDroppedBytes) {
  TempDir dir;
  auto store = make_store(dir, 2);
  const std::string full = slurp(store->path());
  const std::string path = dir.path() + "/torn.jsonl";
  const std::string torn = "{\"type\":\"mess";
  spit(path, full + torn);
  auto loaded = SessionStore::open_read_only(path);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ((*loaded)->dropped_torn_bytes(), torn.size());
  EXPECT_EQ(slurp(path).size(), full.size() + torn.size());  // read-only leaves the bytes alone
}

}  // namespace
}  // namespace moat::sessions
