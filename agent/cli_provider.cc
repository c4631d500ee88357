// agent/cli_provider.cc: `moat provider parse` and `moat prompt show`.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "agent/cli.h"
#include "agent/providers/decoder.h"
#include "agent/providers/prompt.h"
#include "base/log.h"
#include "tools/registry.h"

namespace moat::agent {
namespace {

using nlohmann::json;
namespace p = providers;

struct ParseOptions {
  std::string api;
  std::string file;
  std::string format = "sse";  // sse: a raw response body; chunks: one data payload per line
  std::optional<unsigned> split_seed;
  bool normalized = false;
};

struct PromptOptions {
  std::string workspace;
  bool full = false;
};

// vercel/ai's capture format: each line is one `data:` payload. Anthropic and Responses
// payloads get the `event:` line the real wire carries; Chat streams get their [DONE].
std::string body_from_chunks(const std::string& chunks, p::Api api) {
  std::string body;
  std::istringstream in(chunks);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (api != p::Api::kOpenAiChat) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("type") && j["type"].is_string())
        body += "event: " + j["type"].get<std::string>() + "\n";
    }
    body += "data: " + line + "\n\n";
  }
  if (api == p::Api::kOpenAiChat) body += "data: [DONE]\n\n";
  return body;
}

// Random cut points (1 to 64 bytes apart): the same seed always gives the same split.
std::vector<size_t> random_cuts(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<size_t> cuts;
  for (size_t pos = 0;;) {
    pos += 1 + rng() % 64;
    if (pos >= size) break;
    cuts.push_back(pos);
  }
  return cuts;
}

json summary(const p::DecodedStream& d) {
  std::string text, reasoning;
  json calls = json::array();
  for (const auto& b : d.message["content"]) {
    const std::string type = b.value("type", "");
    if (type == "text") text += b.value("text", "");
    if (type == "thinking") reasoning += b.value("thinking", "");
    if (type == "toolCall") calls.push_back(b);
  }
  json out = {{"text", text},
              {"reasoning", reasoning.empty() ? json(nullptr) : json(reasoning)},
              {"toolCalls", calls},
              {"stopReason", d.message["stopReason"]},
              {"usage", d.message["usage"]},
              {"model", d.message["model"]}};
  out["error"] = d.failure ? json({{"status", d.failure->status},
                                   {"kind", d.failure->kind},
                                   {"message", d.failure->message}})
                           : json(nullptr);
  return out;
}

int run_parse(const ParseOptions& o) {
  auto api = p::parse_api(o.api);
  if (!api) {
    std::fprintf(stderr, "moat provider parse: %s\n", api.error().message().c_str());
    return kExitUsage;
  }
  std::ifstream in(o.file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "moat provider parse: cannot open %s\n", ::moat::quoted(o.file).c_str());
    return kExitUsage;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string body = o.format == "chunks" ? body_from_chunks(ss.str(), *api) : ss.str();
  const auto cuts = o.split_seed ? random_cuts(body.size(), *o.split_seed) : std::vector<size_t>{};
  const p::DecodedStream d = p::decode_body(*api, body, cuts, {"capture", "", nullptr});
  const json out = o.normalized ? d.normalized : summary(d);
  std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  // A stream that holds an error (or ends early) is what the user came to see; say so.
  return d.failure ? kExitProvider : kExitDone;
}

std::string current_dir() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

int run_prompt_show(const PromptOptions& o) {
  p::PromptInputs in;
  in.tools = tools::all_tools();
  in.workspace = o.workspace.empty() ? current_dir() : o.workspace;
  in.project_docs = p::find_project_docs(in.workspace);
  size_t total = 0;
  const auto blocks = p::system_prompt_blocks(in);
  for (const auto& b : blocks) {
    total += b.text.size();
    std::printf("== %-10s %7zu bytes\n", b.name.c_str(), b.text.size());
    if (o.full) std::printf("%s\n\n", b.text.c_str());
  }
  // The joined prompt adds "\n\n" between blocks.
  const size_t joined = total + (blocks.empty() ? 0 : 2 * (blocks.size() - 1));
  std::printf("== total      %7zu bytes (~%zu tokens)\n", joined, joined / 4);
  return kExitDone;
}

void add_parse_command(CLI::App& provider, int& exit_code) {
  auto po = std::make_shared<ParseOptions>();
  auto* parse = provider.add_subcommand(
      "parse",
      "Feed a recorded streaming response body through the real parser and print the "
      "assembled assistant message as JSON (exit 4 if the stream holds an error)");
  set_exit_codes(*parse, {kExitDone, kExitUsage, kExitProvider});
  parse->add_option("--api", po->api, "openai-chat | anthropic | openai-responses")->required();
  parse->add_option(
      "--split-seed", po->split_seed,
      "Feed the body in random pieces cut with this seed (the result must not change)");
  parse
      ->add_option("--format", po->format,
                   "sse (raw body, default) | chunks (one data payload per line)")
      ->check(CLI::IsMember({"sse", "chunks"}));
  parse->add_flag("--normalized", po->normalized, "Print the wire-level normalised parse instead");
  parse->add_option("file", po->file, "The captured response body")->required();
  parse->callback([po, &exit_code] { exit_code = run_parse(*po); });
}

void add_prompt_show_command(CLI::App& prompt, int& exit_code) {
  auto so = std::make_shared<PromptOptions>();
  auto* show =
      prompt.add_subcommand("show", "Print the assembled system prompt's blocks with their sizes");
  set_exit_codes(*show, {kExitDone, kExitUsage});
  show->add_option("--workspace,-C", so->workspace,
                   "Workspace directory (default: the current one)");
  show->add_flag("--full", so->full, "Print each block's text too");
  show->callback([so, &exit_code] { exit_code = run_prompt_show(*so); });
}

}  // namespace

void add_provider_commands(CLI::App& app, int& exit_code) {
  auto* provider =
      app.add_subcommand("provider", "Replay recorded provider streams through the parser");
  provider->require_subcommand(1);
  set_group_exit_codes(*provider);
  add_parse_command(*provider, exit_code);
  auto* prompt = app.add_subcommand("prompt", "Inspect the system prompt");
  prompt->require_subcommand(1);
  set_group_exit_codes(*prompt);
  add_prompt_show_command(*prompt, exit_code);
}

}  // namespace moat::agent
