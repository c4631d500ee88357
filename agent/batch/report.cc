// agent/batch/report.cc: the batch report page: self-contained (inline CSS and a short sort
// script), every value from results.jsonl escaped.
#include "agent/batch/report.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "agent/batch/item.h"
#include "agent/batch/results.h"
#include "sessions/render_session.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;
using sessions::html_escape;

// Failing items first: the order a reader acts in.
int rank(const std::string& status) {
  if (status == "error") return 0;
  if (status == "missing") return 1;
  if (status == "failed") return 2;
  return 3;
}

std::string check_text(const ItemResult& r) {
  if (!r.check) return "none";
  if (r.check->run.timed_out) return "timed out";
  return r.check->passed ? "passed" : "failed (exit " + std::to_string(r.check->run.exit) + ")";
}

// Programs the item's agent and check ran although a rule asks about them (headless,
// [exec] headless_ask = "allow"): the count, and a tooltip naming the first few and their rules.
std::string flagged_html(const ItemResult& r) {
  const int n = flagged_count(r);
  if (n == 0) return "0";
  std::string title;
  for (const AuditSide* side : {&r.audit, r.check ? &r.check->audit : nullptr})
    for (const FlaggedExec& f : side ? side->flagged : std::vector<FlaggedExec>{})
      title += f.argv + " (rule " + f.rule + ")\n";
  return "<span title=\"" + html_escape(title) + "\">" + std::to_string(n) + "</span>";
}

// The files the item's patch adds or changes that a host program runs code from (results line
// "hostExecuted"; --apply leaves such a patch for the person): named in the cell itself.
std::size_t host_executed_count(const ItemResult& r) {
  return r.host_executed ? r.host_executed->size() : 0;
}

std::string host_executed_html(const ItemResult& r) {
  if (host_executed_count(r) == 0) return "";
  std::string names;
  for (const std::string& f : *r.host_executed)
    names += (names.empty() ? "" : ", ") + html_escape(f);
  return "<b class=\"host\">" + names + "</b>";
}

std::string money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// A diff's size with its unit: "712 B", "3.4 KiB", "1.2 MiB".
std::string size_text(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  char buf[32];
  const double kib = static_cast<double>(bytes) / 1024;
  if (kib < 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", kib);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", kib / 1024);
  return buf;
}

std::string link(const std::string& href, const std::string& text) {
  return "<a href=\"" + html_escape(href) + "\">" + html_escape(text) + "</a>";
}

// A cell with the value its column sorts by.
std::string cell(const std::string& sort_key, const std::string& html, const char* cls = "") {
  return "<td class=\"" + std::string(cls) + "\" data-sort=\"" + html_escape(sort_key) + "\">" +
         html + "</td>";
}

std::string links(const ItemResult& r) {
  const std::string dir = "items/" + r.id;
  std::string out;
  if (r.patch) out += link(*r.patch, "patch") + " ";
  if (r.session) out += link(dir + "/session.html", "session") + " ";
  if (r.audit.audit_log) out += link(dir + "/audit.html", "audit") + " ";
  if (r.check && r.check->audit.audit_log)
    out += link(dir + "/check-audit.html", "check audit") + " ";
  // What the agent and the check printed: where a failure's cause is.
  if (r.agent) out += link(dir + "/run.log", "run.log") + " ";
  if (r.check) out += link(dir + "/check.log", "check.log") + " ";
  return out;
}

std::string row(const ItemResult& r) {
  const std::string& id = r.id;
  const std::string status = r.status.value_or("?"), reason = r.reason.value_or("");
  const double cost = r.cost.value_or(0);
  const std::uint64_t bytes = r.patch_bytes.value_or(0);
  const int turns = r.turns.value_or(0);
  std::string out = "<tr class=\"" + html_escape(status) + "\">";
  out += cell(id, html_escape(id), "id");
  // Where the item came from: its local repository or the url it was cloned from (and ref).
  const std::string source = r.repo + (r.ref ? " @ " + *r.ref : "");
  out += cell(source, html_escape(source), "source");
  out += cell(std::to_string(rank(status)), html_escape(status), "status");
  out += cell(check_text(r), html_escape(check_text(r)), "check");
  out += cell(money(cost), "$" + money(cost), "cost");
  out += cell(std::to_string(turns), std::to_string(turns), "turns");
  out += cell(std::to_string(bytes), size_text(bytes), "diff");
  out += cell(std::to_string(flagged_count(r)), flagged_html(r), "flagged");
  out += cell(std::to_string(host_executed_count(r)), host_executed_html(r), "hostfiles");
  out += cell(reason, html_escape(reason), "reason");
  out += "<td class=\"links\">" + links(r) + "</td></tr>\n";
  return out;
}

constexpr const char* kHead = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>moat batch report</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}th{cursor:pointer;background:#eee}
tr.error,tr.missing{background:#fdd}tr.failed{background:#fee}tr.passed{background:#efe}
</style></head><body>
)";

// Clicking a header sorts by that column (numbers as numbers), again to reverse; #sort=KEY
// sorts on load.
constexpr const char* kSortScript = R"(<script>
document.querySelectorAll('#items th').forEach(function(th, col) {
  th.addEventListener('click', function() {
    var body = document.querySelector('#items tbody');
    var rows = Array.from(body.rows), dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    rows.sort(function(a, b) {
      var x = a.cells[col].dataset.sort, y = b.cells[col].dataset.sort;
      var nx = parseFloat(x), ny = parseFloat(y);
      if (!isNaN(nx) && !isNaN(ny)) return (nx - ny) * dir;
      return x.localeCompare(y) * dir;
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
// #sort=KEY in the address opens the page sorted by that column (a link to a sorted view).
var wanted = location.hash.match(/sort=(\w+)/);
if (wanted) {
  var th = document.querySelector('#items th[data-key="' + wanted[1] + '"]');
  if (th) th.click();
}
</script>
)";

std::string totals(const std::vector<ItemResult>& rows) {
  std::size_t passed = 0, failed = 0, missing = 0;
  double cost = 0;
  int flagged = 0;
  std::size_t host = 0;
  for (const auto& r : rows) {
    if (host_executed_count(r) > 0) ++host;
    const std::string s = r.status.value_or("");
    if (s == "passed") ++passed;
    else if (s == "missing") ++missing;
    else ++failed;
    cost += r.cost.value_or(0);
    flagged += flagged_count(r);
  }
  std::string flags;
  if (flagged > 0)
    flags = "; <b>" + std::to_string(flagged) +
            "</b> programs ran although a rule asks about them (headless; see each item's "
            "flagged column and audit log)";
  if (host > 0)
    flags += "; <b>" + std::to_string(host) +
             "</b> patches add or change files that programs on your host run code from "
             "(hostfiles column; --apply leaves them to you, --apply-host-executed applies them)";
  return "<p id=\"totals\">" + std::to_string(rows.size()) + " items: <b>" +
         std::to_string(passed) + "</b> passed, <b>" + std::to_string(failed) + "</b> failed, <b>" +
         std::to_string(missing) + "</b> missing; cost $" + money(cost) + flags + "</p>\n";
}

}  // namespace

std::string report_html(const std::vector<ItemResult>& results,
                        const std::vector<std::string>& missing) {
  std::vector<ItemResult> rows = results;
  for (const auto& id : missing) {
    ItemResult& row = rows.emplace_back();
    row.id = id;
    row.status = "missing";
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ItemResult& a, const ItemResult& b) {
    return rank(a.status.value_or("")) < rank(b.status.value_or(""));
  });
  std::string html = kHead;
  html += "<h1>moat batch report</h1>\n" + totals(rows);
  html += "<table id=\"items\"><thead><tr>";
  for (const char* key : {"item", "source", "status", "check", "cost", "turns", "diff", "flagged",
                          "hostfiles", "reason", "links"})
    html += std::string("<th data-key=\"") + key + "\">" + key + "</th>";
  html += "</tr></thead><tbody>\n";
  for (const auto& r : rows) html += row(r);
  html += "</tbody></table>\n";
  html += kSortScript;
  html += "</body></html>\n";
  return html;
}

void write_report(const std::string& out_dir, const std::vector<ItemResult>& results,
                  const std::vector<std::string>& missing) {
  const std::string path = (fs::path(out_dir) / "report.html").string();
  if (auto w = write_file_durably(path, report_html(results, missing)); !w)
    std::fprintf(stderr, "moat batch: report: %s\n", w.error().message().c_str());
}

}  // namespace moat::agent::batch
