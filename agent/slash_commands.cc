// agent/slash_commands.cc: reading a typed "/word" against the table (slash_commands.h).
#include "agent/slash_commands.h"

#include <algorithm>
#include <cctype>

namespace moat::agent {
namespace {

std::string_view trimmed(std::string_view s) {
  const std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string_view::npos ? std::string_view() : s.substr(a, b - a + 1);
}

const SlashCommand* row_of(std::string_view word) {
  for (const SlashCommand& c : kSlashCommands)
    if (c.word == word) return &c;
  return nullptr;
}

}  // namespace

std::optional<SlashLine> read_slash(std::string_view typed) {
  const std::string_view line = trimmed(typed);
  if (line.empty() || line[0] != '/') return std::nullopt;
  std::size_t end = 1;
  while (end < line.size() && std::isalpha(static_cast<unsigned char>(line[end]))) ++end;
  if (end == 1 || (end < line.size() && line[end] != ' ' && line[end] != '\t'))
    return std::nullopt;
  SlashLine s;
  s.word = line.substr(1, end - 1);
  const std::size_t from = line.find_first_not_of(" \t", end);
  if (from != std::string_view::npos) s.rest = line.substr(from);
  s.command = row_of(s.word);
  // A command that stands alone, with words after it, is not that command.
  if (s.command && !s.command->takes_rest && !s.rest.empty()) s.command = nullptr;
  return s;
}

std::string slash_help() {
  std::string out = "moat: between turns a line is the next prompt; while the agent works it steers it";
  for (const SlashCommand& c : kSlashCommands) {
    if (c.usage.empty()) continue;
    std::string usage(c.usage);
    usage.resize(std::max<std::size_t>(usage.size(), 20), ' ');
    out += "\n  " + usage + "   " + std::string(c.help);
  }
  return out;
}

}  // namespace moat::agent
