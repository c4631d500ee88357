// tests/unit/sandbox/net_records_test.cc: net records bounded without losing a connection or a
// decision (issue 26 item 10).
#include "sandbox/net_records.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace moat::sandbox {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The records written, in order.
struct Written {
  std::mutex mu;
  std::vector<json> records;
  NetRecorder recorder() {
    return [this](json r) {
      std::lock_guard<std::mutex> lock(mu);
      records.push_back(std::move(r));
    };
  }
  std::vector<json> snapshot() {
    std::lock_guard<std::mutex> lock(mu);
    return records;
  }
};

json connection(const std::string& host, const std::string& decision, std::int64_t bytes) {
  return {{"call_id", "c1"},         {"exec_id", "e1"},     {"pid", 7},
          {"method", "CONNECT"},     {"host", host},        {"port", 443},
          {"decision", decision},    {"rule", "r." + host}, {"bytes_up", bytes},
          {"bytes_down", 2 * bytes}, {"duration_ms", 0.5}};
}

std::int64_t count_of(const json& r) { return r.value("count", std::int64_t{1}); }

TEST(NetRecords, ALoneConnectionIsWrittenAtOnceExactlyAsItCame) {
  Written w;
  NetRecords records(w.recorder());
  records.add(connection("a.test", "allow", 10));
  const auto now = w.snapshot();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0], connection("a.test", "allow", 10));
}

TEST(NetRecords, ThousandsOfRepeatsBecomeOneCountedRecordWhoseSumsAddUp) {
  Written w;
  {
    NetRecords records(w.recorder(), 1h);  // only the session's end writes the count
    for (int i = 0; i < 5000; ++i) records.add(connection("a.test", "allow", 10));
    EXPECT_EQ(w.snapshot().size(), 1u) << "the first is written at once, the rest gather";
  }
  const auto all = w.snapshot();
  ASSERT_EQ(all.size(), 2u);
  const json& counted = all[1];
  EXPECT_EQ(counted.value("count", 0), 4999) << counted.dump();
  EXPECT_EQ(counted.value("bytes_up", 0), 4999 * 10);
  EXPECT_EQ(counted.value("bytes_down", 0), 4999 * 20);
  EXPECT_NEAR(counted.value("duration_ms", 0.0), 4999 * 0.5, 1e-6);
  EXPECT_EQ(counted.value("errors", -1), 0);
  EXPECT_EQ(counted.value("exec_id", ""), "e1");
  EXPECT_LE(counted.value("first_ts", ""), counted.value("last_ts", ""));
  EXPECT_EQ(counted.value("first_ts", "").size(),
            std::string("2026-03-04T10:15:02.118233140Z").size());
}

TEST(NetRecords, EveryDecisionIsKeptAndEachKindCountedApart) {
  Written w;
  {
    NetRecords records(w.recorder(), 1h);
    for (int i = 0; i < 300; ++i) {
      records.add(connection("a.test", "allow", 1));
      json denied = connection("b.test", "deny", 0);
      denied["error"] = "refused by rule r.b.test (try " + std::to_string(i) + ")";
      records.add(denied);
    }
  }
  std::map<std::string, std::int64_t> by_decision;
  for (const json& r : w.snapshot()) by_decision[r.value("decision", "")] += count_of(r);
  EXPECT_EQ(by_decision["allow"], 300);
  EXPECT_EQ(by_decision["deny"], 300);
  const auto all = w.snapshot();
  ASSERT_EQ(all.size(), 4u);
  for (const json& r : all)
    if (r.contains("count") && r["decision"] == "deny") {
      EXPECT_EQ(r.value("errors", 0), 299) << r.dump();
      EXPECT_EQ(r.value("error", ""), "refused by rule r.b.test (try 299)") << r.dump();
    }
}

TEST(NetRecords, ACountIsWrittenWhenItsIntervalEndsNotOnlyAtTheSessionsEnd) {
  Written w;
  NetRecords records(w.recorder(), 50ms);
  for (int i = 0; i < 10; ++i) records.add(connection("a.test", "allow", 1));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (w.snapshot().size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  const auto all = w.snapshot();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].value("count", 0), 9);
  // A quiet interval later the kind is forgotten: its next connection is written at once.
  std::this_thread::sleep_for(200ms);
  records.add(connection("a.test", "allow", 1));
  EXPECT_EQ(w.snapshot().size(), 3u);
  EXPECT_FALSE(w.snapshot()[2].contains("count"));
}

TEST(NetRecords, APersonsAnswerIsAlwaysWrittenAlone) {
  Written w;
  NetRecords records(w.recorder(), 1h);
  for (int i = 0; i < 3; ++i) {
    json asked = connection("paste.test", "allow", 1);
    asked["user"] = {{"answer", "allow"}, {"latency_ms", 100 + i}};
    records.add(asked);
  }
  EXPECT_EQ(w.snapshot().size(), 3u);
}

}  // namespace
}  // namespace moat::sandbox
