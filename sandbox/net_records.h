// sandbox/net_records.h: a session's `net` audit records, bounded (issue 26 item 10): every
// connection is still counted and every decision still written, but repeated connections of
// one kind within an interval share one counted record instead of writing one each.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace moat::sandbox {

// Receives each record to write ({host, port, address, decision, rule, ...}).
using NetRecorder = std::function<void(nlohmann::json)>;

// How long repeats of one kind of connection gather before their counted record is written: a
// flood of connections writes at most one record a second per kind.
inline constexpr std::chrono::milliseconds kNetRecordInterval{1000};

// One kind of connection: the same program (call_id, exec_id), the same request (method, host,
// port) and the same outcome (address, decision, rule). docs/sessions.md shows the records.
//
// The first connection of a kind is written at once, exactly as alone, and opens an interval.
// Connections of that kind within the interval are added up into one record written when the
// interval ends, with `count`, `first_ts`, `last_ts` (when the first and last of them ended),
// `bytes_up`, `bytes_down` and `duration_ms` summed, `errors` (how many ended with one) and the
// last `error`; a kind with repeats opens the next interval then, a quiet kind is forgotten.
// Summing `count` (1 when absent) over the records gives the number of connections.
// A record holding a person's answer (`user`) or ending a call (`call_ended`) is always
// written alone, at once.
class NetRecords {
 public:
  explicit NetRecords(NetRecorder write,
                      std::chrono::steady_clock::duration interval = kNetRecordInterval);
  // Writes every count still gathering (the session's end) before returning.
  ~NetRecords();

  void add(nlohmann::json record);

  NetRecords(const NetRecords&) = delete;
  NetRecords& operator=(const NetRecords&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  struct Kind {
    Clock::time_point due;   // when this interval's repeats are written
    nlohmann::json repeats;  // their record so far; null while there is none
  };
  void write_due(bool everything);  // mu_ held
  void run_flusher();

  NetRecorder write_;
  const Clock::duration interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;              // guarded by mu_
  std::map<std::string, Kind> kinds_;  // guarded by mu_; by the kind's key
  std::thread flusher_;                // waits for the earliest due interval; started last
};

}  // namespace moat::sandbox
