// tests/unit/sessions/tree_test.cc: the tree across files: list, continue, resume, fork, labels.
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include <gtest/gtest.h>

#include "sessions/json_util.h"
#include "sessions/store.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using testing::TempDir;

Entry user_message(const std::string& text) {
  return {{"type", "message"},
          {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", text}}}}}}};
}

// Three entries a <- b <- c; returns their ids.
std::vector<std::string> fill(SessionStore& s) {
  std::vector<std::string> ids;
  for (const char* t : {"first question", "b", "c"}) ids.push_back(*s.append(user_message(t)));
  EXPECT_TRUE(s.sync().has_value());
  return ids;
}

TEST(SessionTree, ListFindsSessionsOfOneWorkspaceNewestFirst) {
  TempDir dir;
  auto a = SessionStore::create(dir.path(), "/w/one");
  fill(**a);
  ::usleep(20000);  // distinct mtimes
  auto b = SessionStore::create(dir.path(), "/w/one");
  fill(**b);
  auto other = SessionStore::create(dir.path(), "/w/two");
  fill(**other);
  auto list = list_sessions(dir.path(), "/w/one");
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, (*b)->id());
  EXPECT_EQ((*list)[0].first_message, "first question");
  EXPECT_EQ((*list)[0].entries, 3u);
  EXPECT_EQ(list_sessions(dir.path())->size(), 3u);
  EXPECT_EQ(*find_latest_session(dir.path(), "/w/one"), (*b)->path());
}

// A listing parses only the lines it shows (the header, the first user message, the names):
// a damaged entry in the middle does not hide the session from `moat sessions list` (opening
// it reports the damage), and a file that is not a session is still skipped. Before, every
// session was parsed in full to be listed (44x the time to read the files, session_bench).
TEST(SessionTree, AListingParsesOnlyTheLinesItShows) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  fill(**s);
  ASSERT_TRUE((*s)->append({{"type", "session_info"}, {"name", "the \"user\" rename"}}));
  ASSERT_TRUE((*s)->sync());
  const std::string path = (*s)->path();
  s->reset();
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"type\": \"message\", not json\n";
  }
  std::ofstream(dir.path() + "/" + workspace_slug("/w") + "/2026-01-01T00-00-00.000Z_x.jsonl")
      << "not a session\n";
  auto list = list_sessions(dir.path(), "/w");
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].first_message, "first question");
  EXPECT_EQ((*list)[0].name, "the \"user\" rename");
  EXPECT_EQ((*list)[0].entries, 5u);
  EXPECT_FALSE(SessionStore::open_read_only(path).has_value());
}

TEST(SessionTree, ContinueWithoutSessionsIsEnoent) {
  TempDir dir;
  auto latest = find_latest_session(dir.path(), "/nowhere");
  ASSERT_FALSE(latest.has_value());
  EXPECT_EQ(latest.error().code, ENOENT);
}

TEST(SessionTree, RefResolvesIdPrefixEntryPrefixAndLabel) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  ASSERT_TRUE(
      (*s)->append({{"type", "label"}, {"targetId", ids[1]}, {"label", "before-refactor"}}));
  const std::string sid = (*s)->id();
  s->reset();  // release the writer's lock

  auto whole = resolve_session_ref(dir.path(), sid);
  ASSERT_TRUE(whole.has_value()) << whole.error().message();
  EXPECT_EQ(whole->session_id, sid);
  EXPECT_TRUE(whole->entry_id.empty());

  auto by_prefix = resolve_session_ref(dir.path(), sid.substr(0, 13) + "@" + ids[0].substr(0, 6));
  ASSERT_TRUE(by_prefix.has_value()) << by_prefix.error().message();
  EXPECT_EQ(by_prefix->entry_id, ids[0]);

  auto by_label = resolve_session_ref(dir.path(), sid + "@before-refactor");
  ASSERT_TRUE(by_label.has_value());
  EXPECT_EQ(by_label->entry_id, ids[1]);

  EXPECT_EQ(resolve_session_ref(dir.path(), sid + "@zzzz").error().code, ENOENT);
  EXPECT_EQ(resolve_session_ref(dir.path(), "ffffffff").error().code, ENOENT);
  auto by_path = resolve_session_ref(dir.path(), whole->path + "@" + ids[2]);
  ASSERT_TRUE(by_path.has_value());
  EXPECT_EQ(by_path->entry_id, ids[2]);
}

TEST(SessionTree, AnAmbiguousSessionPrefixIsAnErrorListingTheCandidates) {
  TempDir dir;
  auto a = SessionStore::create(dir.path(), "/w");
  auto b = SessionStore::create(dir.path(), "/w");
  ASSERT_TRUE(a && b);
  // UUIDv7s made in the same millisecond share their first 8 hex digits; "0" is shared by
  // every id made before the year 10889.
  const auto r = resolve_session_ref(dir.path(), "0");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("ambiguous"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find((*a)->id()), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find((*b)->id()), std::string::npos) << r.error().message();
}

// --continue loads each candidate once, for writing (it loaded the newest to check it, then
// again to write to it): a damaged newest session is skipped with a warning as before, and
// one another moat is writing to is an error, not skipped.
TEST(SessionTree, ContinueOpensTheNewestSessionThatLoadsForWritingInOneLoad) {
  TempDir dir;
  auto older = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**older);
  const std::string older_path = (*older)->path();
  older->reset();
  ::usleep(20000);  // distinct mtimes
  auto newer = SessionStore::create(dir.path(), "/w");
  fill(**newer);
  const std::string newer_path = (*newer)->path();
  auto busy = continue_session(dir.path(), "/w");
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().code, EWOULDBLOCK) << busy.error().message();
  newer->reset();
  std::ofstream(newer_path, std::ios::app) << "{\"type\": \"message\", not json\n";
  auto resumed = continue_session(dir.path(), "/w");
  ASSERT_TRUE(resumed.has_value()) << resumed.error().message();
  EXPECT_EQ((*resumed)->path(), older_path);
  EXPECT_EQ((*resumed)->leaf(), ids[2]);
  EXPECT_TRUE((*resumed)->append(user_message("more")).has_value());  // opened for writing
  EXPECT_EQ(continue_session(dir.path(), "/nowhere").error().code, ENOENT);
}

// Naming a session without @ENTRY reads only its header line (before, the whole file was
// loaded to check its header, then loaded again by the resume): the damage in its body is
// reported by the one load that uses it, naming the line.
TEST(SessionTree, ASessionNamedWithoutAnEntryIsFoundFromItsHeaderAlone) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w/here");
  fill(**s);
  const std::string sid = (*s)->id();
  const std::string path = (*s)->path();
  s->reset();
  std::ofstream(path, std::ios::app) << "{\"type\": \"message\", not json\n";
  auto ref = resolve_session_ref(dir.path(), sid.substr(0, 12));
  ASSERT_TRUE(ref.has_value()) << ref.error().message();
  EXPECT_EQ(ref->session_id, sid);
  EXPECT_EQ(ref->path, path);
  EXPECT_EQ(*session_workspace(path), "/w/here");
  auto resumed = resume_session(dir.path(), sid);
  ASSERT_FALSE(resumed.has_value());
  EXPECT_NE(resumed.error().message().find(path + ":5 "), std::string::npos)
      << resumed.error().message();
  std::ofstream(dir.path() + "/" + workspace_slug("/w") + "/2026-01-01T00-00-00.000Z_bad.jsonl")
      << "not a session\n";
  EXPECT_FALSE(resolve_session_ref(dir.path(), "bad").has_value());
}

// ID@ENTRY resolves labels and id prefixes from the ids and types the open scanned (only
// label entries are parsed), and names the same entries in resume, fork and a lookup.
TEST(SessionTree, ResumeForkAndLookupAtAnEntryNameTheSameEntry) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[1]}, {"label", "mid"}}));
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[0]}, {"label", "start"}}));
  ASSERT_TRUE((*s)->sync());
  const std::string sid = (*s)->id();
  s->reset();
  for (const auto& [name, want] : std::vector<std::pair<std::string, std::string>>{
           {"mid", ids[1]}, {"start", ids[0]}, {ids[2].substr(0, 7), ids[2]}, {ids[1], ids[1]}}) {
    auto ref = resolve_session_ref(dir.path(), sid + "@" + name);
    ASSERT_TRUE(ref.has_value()) << name << ": " << ref.error().message();
    EXPECT_EQ(ref->entry_id, want) << name;
    auto fork = fork_session(dir.path(), sid + "@" + name, "/w");
    ASSERT_TRUE(fork.has_value()) << fork.error().message();
    EXPECT_EQ((*fork)->leaf(), want) << name;
    auto resumed = resume_session(dir.path(), sid + "@" + name);
    ASSERT_TRUE(resumed.has_value()) << resumed.error().message();
    EXPECT_EQ((*resumed)->leaf(), want) << name;
  }
}

TEST(SessionTree, ResumeAtAnEntryBranchesThere) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  const std::string sid = (*s)->id();
  s->reset();
  auto resumed = resume_session(dir.path(), sid + "@" + ids[0]);
  ASSERT_TRUE(resumed.has_value()) << resumed.error().message();
  EXPECT_EQ((*resumed)->leaf(), ids[0]);
  auto d = (*resumed)->append(user_message("retry"));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*resumed)->path_to_leaf().size(), 2u);
  EXPECT_EQ((*resumed)->entries().size(), 4u);  // c is still there, on its own branch
}

TEST(SessionTree, ResumeWithoutEntryContinuesTheNewestLeaf) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  const std::string sid = (*s)->id();
  s->reset();
  auto resumed = resume_session(dir.path(), sid);
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ((*resumed)->leaf(), ids[2]);
}

TEST(SessionTree, ForkCopiesTheRootToEntryPathIntoANewFilePointingAtItsParent) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  const std::string sid = (*s)->id();
  auto fork = fork_session(dir.path(), sid + "@" + ids[1], "/w2");
  ASSERT_TRUE(fork.has_value()) << fork.error().message();
  EXPECT_NE((*fork)->id(), sid);
  EXPECT_NE((*fork)->path(), (*s)->path());
  EXPECT_EQ(str_field((*fork)->header(), "parentSession"), sid);
  EXPECT_EQ(str_field((*fork)->header(), "workspace"), "/w2");
  const auto path = (*fork)->path_to_leaf();
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(str_field(path[0], "id"), ids[0]);
  EXPECT_EQ(str_field(path[1], "id"), ids[1]);
  EXPECT_EQ(path[1]["message"], (*s)->entries()[1]["message"]);
  // The source is unchanged.
  EXPECT_EQ((*s)->entries().size(), 3u);
  auto reloaded = SessionStore::open_read_only((*fork)->path());
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)->entries().size(), 2u);
}

TEST(SessionTree, RelabellingMovesALabelAndAnEmptyLabelRemovesIt) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  const auto ids = fill(**s);
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[0]}, {"label", "x"}}));
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[0]}, {"label", "y"}}));
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[1]}, {"label", "z"}}));
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", ids[1]}, {"label", ""}}));
  const auto labels = labels_of(**s);
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_EQ(labels[0].first, ids[0]);
  EXPECT_EQ(labels[0].second, "y");
  EXPECT_EQ(*resolve_entry(**s, "y"), ids[0]);
}

TEST(SessionTree, WorkspaceSlugsDifferForPathsThatLookAlike) {
  EXPECT_NE(workspace_slug("/a/b"), workspace_slug("/a-b"));
  EXPECT_EQ(workspace_slug("/a/b"), workspace_slug("/a/b"));
  EXPECT_EQ(workspace_slug("/home/dev/repo").rfind("home-dev-repo-", 0), 0u);
  EXPECT_EQ(workspace_slug("/..").find('/'), std::string::npos);
  EXPECT_NE(workspace_slug("/..")[0], '.');
}

}  // namespace
}  // namespace moat::sessions
