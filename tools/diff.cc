// tools/diff.cc: common prefix and suffix are trimmed, the middle is diffed by LCS when it
// is small enough and shown as one replaced block otherwise (an edit's change is local).
#include "tools/diff.h"

#include <algorithm>
#include <vector>

namespace moat::tools {
namespace {

constexpr std::size_t kMaxLcsCells = 4'000'000;

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? s.size() : nl;
    std::string_view line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

enum class Op { kKeep, kDel, kAdd };
struct Step {
  Op op;
  std::size_t a;  // index in before (kKeep, kDel)
  std::size_t b;  // index in after (kKeep, kAdd)
};

std::vector<Step> diff_middle(const std::vector<std::string_view>& a, std::size_t a0,
                              std::size_t a1, const std::vector<std::string_view>& b,
                              std::size_t b0, std::size_t b1) {
  const std::size_t n = a1 - a0, m = b1 - b0;
  std::vector<Step> steps;
  if (n * m > kMaxLcsCells) {
    for (std::size_t i = a0; i < a1; ++i) steps.push_back({Op::kDel, i, b0});
    for (std::size_t j = b0; j < b1; ++j) steps.push_back({Op::kAdd, a1, j});
    return steps;
  }
  std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      steps.push_back({Op::kKeep, a0 + i++, b0 + j++});
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      steps.push_back({Op::kDel, a0 + i++, b0 + j});  // deletions first, like diff -u
    } else {
      steps.push_back({Op::kAdd, a0 + i, b0 + j++});
    }
  }
  return steps;
}

std::string range(std::size_t start, std::size_t count) {
  // diff -u prints an empty range as "start-1,0".
  if (count == 0) return std::to_string(start == 0 ? 0 : start - 1) + ",0";
  if (count == 1) return std::to_string(start);
  return std::to_string(start) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, const std::string& path,
                         std::size_t context) {
  const auto a = lines_of(before);
  const auto b = lines_of(after);
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  std::vector<Step> steps;
  for (std::size_t i = 0; i < pre; ++i) steps.push_back({Op::kKeep, i, i});
  for (const Step& s : diff_middle(a, pre, a.size() - suf, b, pre, b.size() - suf))
    steps.push_back(s);
  for (std::size_t k = suf; k > 0; --k) steps.push_back({Op::kKeep, a.size() - k, b.size() - k});

  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  std::size_t k = 0;
  while (k < steps.size()) {
    while (k < steps.size() && steps[k].op == Op::kKeep) ++k;
    if (k == steps.size()) break;
    // A hunk: back up `context` lines, run until `2*context` unchanged lines in a row.
    std::size_t start = k >= context ? k - context : 0;
    std::size_t end = k;
    std::size_t keeps = 0;
    while (end < steps.size() && keeps <= 2 * context) {
      keeps = steps[end].op == Op::kKeep ? keeps + 1 : 0;
      ++end;
    }
    if (keeps > context) end -= keeps - context;
    std::size_t na = 0, nb = 0;
    std::string body;
    for (std::size_t s = start; s < end; ++s) {
      const Step& st = steps[s];
      if (st.op == Op::kKeep) {
        body += " " + std::string(a[st.a]) + "\n";
        ++na;
        ++nb;
      }
      if (st.op == Op::kDel) {
        body += "-" + std::string(a[st.a]) + "\n";
        ++na;
      }
      if (st.op == Op::kAdd) {
        body += "+" + std::string(b[st.b]) + "\n";
        ++nb;
      }
    }
    out += "@@ -" + range(steps[start].a + 1, na) + " +" + range(steps[start].b + 1, nb) + " @@\n" +
           body;
    k = end;
  }
  return out;
}

}  // namespace moat::tools
