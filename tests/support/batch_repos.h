// tests/support/batch_repos.h: generated repositories, a scripted rename (replay file) and a
// manifest for `moat batch` tests and benches. Each repository differs (its own number in a
// comment and in a constant), so each item's patch is its own.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace moat::testing {

// The rename every item's agent makes: edit two files and add a new one (new files must be in
// the patch), then stop.
inline constexpr const char* kRenameReplay =
    R"({"text": "Renaming.", "tool_calls": [{"name": "bash", "arguments": {"command": "sed -i 's/compute_total/sum_line_items/g' lib.sh main.sh && echo 'renamed compute_total' > NOTES.md"}}], "usage": {"input": 100, "output": 20}}
{"text": "Done: renamed, tests pass.", "usage": {"input": 150, "output": 10}}
)";

// The check: passes only after the rename.
inline constexpr const char* kRenameCheck = "sh run_tests.sh";

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Creates dir/repo-NN for NN in [0, count) as git repositories with one commit, plus
// dir/rename.replay.jsonl and dir/batch.toml (`extra` appended to its top-level keys).
// Returns false when git fails.
inline bool make_batch_repos(const std::string& dir, int count, const std::string& extra = "") {
  namespace fs = std::filesystem;
  std::string manifest =
      "task = \"Rename compute_total to sum_line_items.\"\n"
      "model = \"replay:rename.replay.jsonl\"\n"
      "check = \"" +
      std::string(kRenameCheck) + "\"\n" + extra + "\n";
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "repo-%02d", i);
    const fs::path r = fs::path(dir) / name;
    fs::create_directories(r);
    const std::string n = std::to_string(i);
    write_text(r / "lib.sh",
               "# library " + n + "\ncompute_total() { echo $(( $1 + $2 + " + n + " )); }\n");
    write_text(r / "main.sh", ". ./lib.sh\ncompute_total 1 2\n");
    write_text(r / "run_tests.sh",
               "grep -q sum_line_items lib.sh && ! grep -q compute_total lib.sh main.sh && "
               "test -f NOTES.md\n");
    const std::string git = "cd '" + r.string() +
                            "' && git init -q && git add -A && git -c user.name=t -c "
                            "user.email=t@example.com commit -qm init";
    if (std::system(git.c_str()) != 0) return false;
    manifest += std::string("[[repo]]\npath = \"") + name + "\"\n";
  }
  write_text(fs::path(dir) / "rename.replay.jsonl", kRenameReplay);
  write_text(fs::path(dir) / "batch.toml", manifest);
  return true;
}

}  // namespace moat::testing
