// tools/edit_match.cc: the normalised views, the match rules (found, unique, disjoint,
// changes something) and the splice.
#include "tools/edit_match.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

namespace moat::tools {
namespace {

// A normalised text and, for each of its bytes, the original byte range it came from.
struct View {
  std::string text;
  std::vector<std::size_t> begin;
  std::vector<std::size_t> end;
  void push(std::string_view bytes, std::size_t b, std::size_t e) {
    for (char c : bytes) {
      text += c;
      begin.push_back(b);
      end.push_back(e);
    }
  }
};

// One code point at s[i]: its value and length; an invalid byte is itself, length 1.
std::pair<std::int32_t, std::size_t> decode(std::string_view s, std::size_t i) {
  utf8proc_int32_t cp = -1;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                  static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  if (n <= 0) return {-1, 1};
  return {cp, static_cast<std::size_t>(n)};
}

// The characters models type in place of what editors and word processors insert.
std::int32_t fold_lookalike(std::int32_t cp) {
  switch (cp) {
    case 0x2018:
    case 0x2019:
    case 0x201A:
    case 0x201B:
    case 0x2032: return '\'';  // single smart quotes and prime
    case 0x201C:
    case 0x201D:
    case 0x201E:
    case 0x201F:
    case 0x2033: return '"';  // double smart quotes and double prime
    case 0x2010:
    case 0x2011:
    case 0x2012:
    case 0x2013:
    case 0x2014:
    case 0x2015:
    case 0x2212: return '-';  // hyphens, figure/en/em dashes, horizontal bar, minus sign
    case 0x00A0:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return ' ';  // no-break, narrow no-break, medium mathematical and ideographic spaces
    default:
      if (cp >= 0x2000 && cp <= 0x200A) return ' ';  // en quad .. hair space
      return cp;
  }
}

std::string nfkc(std::string_view bytes) {
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(bytes.data()),
      static_cast<utf8proc_ssize_t>(bytes.size()), &out,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(bytes);
  std::string s(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return s;
}

// CRLF always reads as LF (models send LF). The fuzzy view also folds lookalikes, applies
// NFKC per code point (so every byte still maps back) and drops trailing blanks.
View normalise(std::string_view s, std::size_t from, bool fuzzy) {
  View v;
  std::string pending;  // blanks that are only kept if something other than a newline follows
  std::vector<std::pair<std::size_t, std::size_t>> pending_ranges;
  for (std::size_t i = from; i < s.size();) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      pending.clear();
      pending_ranges.clear();
      v.push("\n", i, i + 2);
      i += 2;
      continue;
    }
    if (!fuzzy || static_cast<unsigned char>(s[i]) < 0x80) {
      const char c = s[i];
      if (fuzzy && (c == ' ' || c == '\t')) {
        pending += c;
        pending_ranges.emplace_back(i, i + 1);
      } else {
        if (c == '\n') {
          pending.clear();
          pending_ranges.clear();
        }
        for (std::size_t k = 0; k < pending.size(); ++k)
          v.push(pending.substr(k, 1), pending_ranges[k].first, pending_ranges[k].second);
        pending.clear();
        pending_ranges.clear();
        v.push(std::string_view(&s[i], 1), i, i + 1);
      }
      ++i;
      continue;
    }
    auto [cp, len] = decode(s, i);
    std::string folded;
    if (cp < 0) {
      folded = std::string(1, s[i]);
    } else {
      const std::int32_t f = fold_lookalike(cp);
      if (f == ' ') {
        pending += ' ';
        pending_ranges.emplace_back(i, i + len);
        i += len;
        continue;
      }
      folded = f < 0x80 ? std::string(1, static_cast<char>(f)) : nfkc(s.substr(i, len));
    }
    for (std::size_t k = 0; k < pending.size(); ++k)
      v.push(pending.substr(k, 1), pending_ranges[k].first, pending_ranges[k].second);
    pending.clear();
    pending_ranges.clear();
    v.push(folded, i, i + len);
    i += len;
  }
  return v;
}

struct Match {
  std::size_t index;  // which edit
  std::size_t begin;  // original byte range
  std::size_t end;
};

std::size_t count_occurrences(std::string_view hay, std::string_view needle, std::size_t* first) {
  std::size_t n = 0;
  *first = std::string_view::npos;
  for (std::size_t pos = hay.find(needle); pos != std::string_view::npos;
       pos = hay.find(needle, pos + 1)) {
    if (n++ == 0) *first = pos;
  }
  return n;
}

std::string with_line_endings(std::string text, bool crlf) {
  if (!crlf) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (text[i] == '\n') out += '\r';
    out += text[i];
  }
  return out;
}

// Every edit matched in one view; fails with the first edit that is missing or ambiguous.
// `missing` is set when an edit was not found (the caller may retry normalised).
Result<std::vector<Match>> match_all(std::string_view original, std::size_t from,
                                     const std::vector<EditSpec>& edits, bool fuzzy,
                                     const std::string& shown, bool* missing) {
  const View file = normalise(original, from, fuzzy);
  std::vector<Match> matches;
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const std::string needle = normalise(edits[i].old_text, 0, fuzzy).text;
    std::size_t first = 0;
    const std::size_t n = needle.empty() ? 0 : count_occurrences(file.text, needle, &first);
    const std::string which = "edit " + std::to_string(i + 1) + ": ";
    if (n == 0) {
      *missing = true;
      return fail(which + "oldText not found in " + shown +
                  ". It must match the file exactly, including whitespace and indentation (a "
                  "match ignoring trailing whitespace, Unicode quotes, dashes and spaces was "
                  "tried too). Read the file again and copy the text from it.");
    }
    if (n > 1)
      return fail(which + "oldText occurs " + std::to_string(n) + " times in " + shown +
                  "; it must be unique. Add surrounding lines to make it unique.");
    matches.push_back({i, file.begin[first], file.end[first + needle.size() - 1]});
  }
  return matches;
}

}  // namespace

Result<EditOutcome> apply_edits(std::string_view original, const std::vector<EditSpec>& edits,
                                const std::string& shown) {
  for (std::size_t i = 0; i < edits.size(); ++i) {
    if (edits[i].old_text.empty())
      return fail("edit " + std::to_string(i + 1) + ": oldText is empty; give the text to replace");
    if (edits[i].old_text == edits[i].new_text)
      return fail("edit " + std::to_string(i + 1) +
                  ": newText is identical to oldText; the edit would change nothing");
  }
  const std::size_t from = original.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // keep the BOM
  bool missing = false;
  EditOutcome out;
  auto matches = match_all(original, from, edits, /*fuzzy=*/false, shown, &missing);
  if (!matches && missing) {
    missing = false;
    matches = match_all(original, from, edits, /*fuzzy=*/true, shown, &missing);
    out.normalised = true;
  }
  if (!matches) return fail(matches.error());
  std::vector<Match> sorted = *matches;
  std::sort(sorted.begin(), sorted.end(),
            [](const Match& a, const Match& b) { return a.begin < b.begin; });
  for (std::size_t k = 1; k < sorted.size(); ++k) {
    if (sorted[k].begin < sorted[k - 1].end) {
      const auto [a, b] = std::minmax(sorted[k - 1].index, sorted[k].index);
      return fail("edit " + std::to_string(b + 1) + ": oldText overlaps edit " +
                  std::to_string(a + 1) + "; merge them into one edit or make them disjoint");
    }
  }
  const std::size_t first_nl = original.find('\n');
  const bool crlf =
      first_nl != std::string_view::npos && first_nl > 0 && original[first_nl - 1] == '\r';
  std::size_t pos = 0;
  for (const Match& m : sorted) {
    out.content.append(original.substr(pos, m.begin - pos));
    out.content += with_line_endings(edits[m.index].new_text, crlf);
    pos = m.end;
  }
  out.content.append(original.substr(pos));
  if (out.content == original)
    return fail("the edits leave " + shown +
                " unchanged (oldText and newText differ only in what the "
                "normalised match ignores)");
  return out;
}

}  // namespace moat::tools
