// sandbox/net_records.cc: repeated connections of one kind counted into one record per interval
// (see net_records.h).
#include "sandbox/net_records.h"

#include "base/timestamps.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// The fields that make two connections the same kind; everything else is added up or kept
// from the first.
constexpr const char* kKindFields[] = {"call_id", "exec_id", "method",   "host",
                                       "port",    "address", "decision", "rule"};

std::string kind_of(const json& record) {
  json key = json::array();
  for (const char* field : kKindFields)
    key.push_back(record.contains(field) ? record[field] : json());
  return key.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Adds one connection's record into the kind's counted record (`into` null: this is its first).
void add_up(json& into, json record, const std::string& now) {
  const bool failed = record.contains("error");
  if (into.is_null()) {
    into = std::move(record);
    into["count"] = 0;
    into["first_ts"] = now;
    into["errors"] = 0;
    for (const char* sum : {"bytes_up", "bytes_down", "duration_ms"})
      if (!into.contains(sum)) into[sum] = 0;
  } else {
    for (const char* sum : {"bytes_up", "bytes_down"})
      into[sum] = into[sum].get<std::int64_t>() + record.value(sum, std::int64_t{0});
    into["duration_ms"] = into["duration_ms"].get<double>() + record.value("duration_ms", 0.0);
    if (failed) into["error"] = record["error"];
  }
  into["count"] = into["count"].get<std::int64_t>() + 1;
  into["last_ts"] = now;
  if (failed) into["errors"] = into["errors"].get<std::int64_t>() + 1;
}

}  // namespace

NetRecords::NetRecords(NetRecorder write, Clock::duration interval)
    : write_(std::move(write)), interval_(interval) {
  flusher_ = std::thread([this] { run_flusher(); });
}

NetRecords::~NetRecords() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  flusher_.join();
  std::lock_guard<std::mutex> lock(mu_);
  write_due(/*everything=*/true);
}

// Records are written under mu_, so a kind's counted record never overtakes its first.
void NetRecords::add(json record) {
  std::lock_guard<std::mutex> lock(mu_);
  // A person's answer is a decision of its own, and so is the connection that ended a call.
  if (record.contains("user") || record.contains("call_ended")) {
    write_(std::move(record));
    return;
  }
  const std::string key = kind_of(record);
  auto it = kinds_.find(key);
  if (it == kinds_.end()) {
    const bool was_idle = kinds_.empty();
    kinds_.emplace(key, Kind{Clock::now() + interval_, json()});
    write_(std::move(record));
    if (was_idle) wake_.notify_all();  // the flusher waits for a first interval
    return;
  }
  add_up(it->second.repeats, std::move(record), now_rfc3339_ns());
}

// Writes the counted record of every kind whose interval has ended (or of every kind), opens
// the next interval of a kind that had repeats, and forgets a kind that had none.
void NetRecords::write_due(bool everything) {
  const Clock::time_point now = Clock::now();
  for (auto it = kinds_.begin(); it != kinds_.end();) {
    Kind& k = it->second;
    if (!everything && k.due > now) {
      ++it;
      continue;
    }
    if (k.repeats.is_null()) {
      it = kinds_.erase(it);
      continue;
    }
    write_(std::exchange(k.repeats, json()));
    k.due = now + interval_;
    ++it;
  }
}

// Sleeps until the earliest interval ends (or, with none open, until one opens), writes what is
// due, and ends when the session does.
void NetRecords::run_flusher() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (kinds_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !kinds_.empty(); });
      continue;
    }
    Clock::time_point earliest = Clock::time_point::max();
    for (const auto& [key, k] : kinds_) earliest = std::min(earliest, k.due);
    wake_.wait_until(lock, earliest, [&] { return stopping_; });
    write_due(/*everything=*/false);
  }
}

}  // namespace moat::sandbox
