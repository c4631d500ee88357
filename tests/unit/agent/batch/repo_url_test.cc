// tests/unit/agent/batch/repo_url_test.cc: which url repos a batch clones, and why the others
// are refused (each refusal names what is accepted instead).
#include "agent/batch/repo_url.h"

#include <gtest/gtest.h>

namespace moat::agent::batch {
namespace {

std::string refusal(const std::string& url) {
  auto u = parse_repo_url(url);
  EXPECT_FALSE(u) << url << " was accepted";
  return u ? "" : u.error().message();
}

TEST(RepoUrl, HttpsAndHttpUrlsGiveTheHostAndPortThePolicyJudges) {
  auto u = parse_repo_url("https://GitHub.com/org/svc-a.git");
  ASSERT_TRUE(u) << u.error().message();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "github.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path, "/org/svc-a.git");
  EXPECT_EQ(default_url_id(*u), "svc-a");
  auto h = parse_repo_url("http://git.test:8080/deep/path/tool/");
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(h->port, 8080);
  EXPECT_EQ(default_url_id(*h), "tool");
  auto plain = parse_repo_url("http://10.0.0.7/r");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->port, 80);
}

TEST(RepoUrl, LocalPathsAndFileUrlsAreRefusedPointingAtPath) {
  EXPECT_NE(refusal("file:///srv/git/r.git")
                .find("file:// names a local repository: give it as "
                      "path = "),
            std::string::npos);
  EXPECT_NE(refusal("FILE:///srv/git/r.git").find("file://"), std::string::npos);
  for (const char* local : {"/srv/git/r.git", "../svc-a", "svc-a"})
    EXPECT_NE(refusal(local).find("a local path: give it as path = "), std::string::npos) << local;
}

TEST(RepoUrl, CredentialsInAUrlAreRefusedSayingWhy) {
  for (const char* url : {"https://user:ghp_secret@github.com/org/r.git",
                          "https://token@github.com/org/r.git", "http://a@b@h/r"}) {
    const std::string why = refusal(url);
    EXPECT_NE(why.find("a user or a password in it is refused: it would be written to "
                       "results.jsonl, the report, the audit logs"),
              std::string::npos)
        << why;
  }
}

TEST(RepoUrl, SchemesTheProxyCannotCarryAreRefusedNamingWhatIsAccepted) {
  for (const char* url :
       {"ssh://git@github.com/org/r.git", "git://example.com/r.git", "ftp://example.com/r.git"}) {
    const std::string why = refusal(url);
    EXPECT_NE(why.find("cannot pass moatd's network proxy"), std::string::npos) << why;
    EXPECT_NE(why.find("accepted: https://HOST[:PORT]/PATH or http://"), std::string::npos);
  }
  EXPECT_NE(refusal("git@github.com:org/r.git").find("looks like an ssh address"),
            std::string::npos);
}

TEST(RepoUrl, WhatGitOrAShellCouldReadAsMoreThanAUrlIsRefused) {
  EXPECT_NE(refusal("https://h/r.git?x=1").find("'?' or '#'"), std::string::npos);
  EXPECT_NE(refusal("https://h/r .git").find("spaces"), std::string::npos);
  EXPECT_NE(refusal("https://h/r\n.git").find("control characters"), std::string::npos);
  EXPECT_NE(refusal("https://h_x/r").find("the host must be a name"), std::string::npos);
  EXPECT_NE(refusal("https://-h/r").find("the host must be a name"), std::string::npos);
  EXPECT_NE(refusal("https://h:0/r").find("the port must be"), std::string::npos);
  EXPECT_NE(refusal("https://h:99999/r").find("the port must be"), std::string::npos);
  EXPECT_NE(refusal("https://h").find("no repository path"), std::string::npos);
  EXPECT_NE(refusal("https://h/").find("no repository path"), std::string::npos);
  EXPECT_NE(refusal(std::string("https://h/") + std::string(3000, 'a')).find("longer than"),
            std::string::npos);
}

TEST(RepoUrl, ARefIsANameNeverAnOptionOrARevisionExpression) {
  for (const char* ok : {"main", "v1.2.3", "release/2024-01", "0123abcd"})
    EXPECT_TRUE(check_ref(ok)) << ok;
  for (const char* bad : {"", "-b", "--upload-pack=x", "/main", "main/", "a..b", "HEAD~1",
                          "main^{tree}", "a b", "@{-1}", "a//b"}) {
    auto r = check_ref(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("is not a ref moat accepts"), std::string::npos);
  }
}

}  // namespace
}  // namespace moat::agent::batch
