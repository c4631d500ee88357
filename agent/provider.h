// agent/provider.h: slot 1's interface: a model provider that streams one answer.
//
// Messages are JSON objects in moat's own shape, the same in memory, in the session file
// and across providers (each provider converts to and from its wire format):
//   user:       {"role":"user","content":[{"type":"text","text":...}]}
//   assistant:  {"role":"assistant","content":[{"type":"text","text":...},
//                 {"type":"thinking","thinking":...,"signature":...},
//                 {"type":"toolCall","id":...,"name":...,"arguments":{...}}],
//                "stopReason":"stop"|"length"|"toolUse"|"error"|"aborted",
//                "usage":{"input":N,"output":N,"cacheRead":N,"cacheWrite":N,"cacheWrite1h":N},
//                "provider":...,"model":..., "errorMessage"?: ...}
//   toolResult: {"role":"toolResult","toolCallId":...,"toolName":...,
//                "content":[...blocks...],"isError":bool}
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sessions/message.h"
#include "sessions/message_list.h"
#include "tools/tool.h"

namespace moat::agent {

using sessions::Message;  // its home: sessions/message.h

struct ModelRequest {
  std::string system;                  // the assembled system prompt
  std::vector<tools::ToolSpec> tools;  // as announced by moatd
  // The context: root-to-leaf path of the session, referring to the session's entries
  // (sessions/message_list.h), so building a request copies no message.
  sessions::MessageList messages;
  int max_output_tokens = 8192;
};

// Streamed pieces of an answer, for display only; the returned message is what counts.
struct StreamCallbacks {
  std::function<void(std::string_view)> on_text;
  std::function<void(std::string_view)> on_reasoning;
  // Before a retry: the attempt about to start (1 = first retry), the wait before it, and
  // why (no key in it). Text already streamed will be streamed again by the new attempt.
  std::function<void(int attempt, std::chrono::milliseconds delay, std::string_view reason)>
      on_retry;
};

// Provider failures keep the HTTP status so the CLI can exit 4 and say what happened.
// Error::code holds the HTTP status (or 0); the context names the provider and its message.
class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string name() const = 0;   // "replay", "openai", "anthropic", ...
  virtual std::string model() const = 0;  // model id
  // One model call. Returns the assistant message (see the shape above). A stop of `cancel`
  // ends it at once (a default token never stops).
  virtual Result<Message> complete(const ModelRequest& request, const StreamCallbacks& stream,
                                   std::stop_token cancel) = 0;
};

}  // namespace moat::agent
