// tools/edit_match.h: where each edit's oldText lies in the original file. Matching runs
// on a normalised view that maps every byte back to the original, so replacements splice
// original bytes and every line an edit does not touch keeps its bytes (CRLF, BOM,
// trailing spaces, Unicode).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::tools {

struct EditSpec {
  std::string old_text;
  std::string new_text;
};

struct EditOutcome {
  std::string content;      // the file after all edits, with its BOM and line endings
  bool normalised = false;  // the fallback matching was used
};

// Matches every oldText against `original` (exact up to CRLF; when any edit is not found,
// all of them again on the normalised form: NFKC, trailing whitespace, smart quotes,
// Unicode dashes and spaces), checks uniqueness and overlaps, and applies all edits
// together. The error message names the edit: "edit 2: oldText occurs 3 times in ...".
Result<EditOutcome> apply_edits(std::string_view original, const std::vector<EditSpec>& edits,
                                const std::string& shown_path);

}  // namespace moat::tools
