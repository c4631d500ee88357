// agent/batch/progress.cc: progress lines, the terminal's status line and --json events.
#include "agent/batch/progress.h"

#include <cstdio>

#include "agent/visible.h"
#include "base/byte_strings.h"

namespace moat::agent::batch {
namespace {

using nlohmann::json;

void emit(const json& event) {
  std::printf("%s\n", dump_lossless(event).c_str());
  std::fflush(stdout);
}

// Item ids and reasons are moat's or the manifest's, but a reason may quote a program's
// message, or a url's server through git's: no control character reaches the terminal, C1
// ones included (git replaces C0 in what it quotes, not UTF-8 C2 9B, which is CSI).
std::string printable(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return visible(s);
}

}  // namespace

Progress::Progress(std::size_t total, std::size_t already, double cost, bool json_events,
                   bool terminal)
    : total_(total),
      done_(already),
      cost_(cost),
      json_(json_events),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::counts() const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char eta[32] = "eta ?";
  if (ran_ > 0)
    std::snprintf(eta, sizeof eta, "eta %.0fs",
                  elapsed / static_cast<double>(ran_) * static_cast<double>(total_ - done_));
  char buf[160];
  std::snprintf(buf, sizeof buf, "[%zu/%zu done, %zu failed, %zu running, $%.4f, %s]", done_,
                total_, failed_, running_, cost_, eta);
  return buf;
}

void Progress::show_status() {
  if (terminal_) std::fprintf(stderr, "\r\033[Kmoat batch: %s", counts().c_str());
}

void Progress::started(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ++running_;
  show_status();
  if (json_) emit({{"event", "start"}, {"id", id}});
}

void Progress::finished(const ItemResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  ++done_;
  ++ran_;
  if (r.status != "passed") ++failed_;
  cost_ += r.cost.value_or(0);
  std::string reason = r.reason ? " (" + *r.reason + ")" : "";
  // Programs that ran although a rule asks about them (headless): said with the item.
  if (const int flagged = flagged_count(r); flagged > 0)
    reason += " [" + std::to_string(flagged) + " flagged programs]";
  std::fprintf(stderr, "%smoat batch: %s %s%s  %s\n", terminal_ ? "\r\033[K" : "",
               printable(r.id).c_str(), r.status.value_or("?").c_str(), printable(reason).c_str(),
               counts().c_str());
  show_status();
  if (json_) emit({{"event", "finish"}, {"result", to_json(r)}});
}

double Progress::cost() {
  std::lock_guard<std::mutex> lock(mu_);
  return cost_;
}

void Progress::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (terminal_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace moat::agent::batch
