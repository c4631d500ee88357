// agent/providers/decoder_base.h: what the three decoders keep alike: their context, the count
// of data events, the first failure, the live display of text, and the answer's frame.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "agent/providers/decoder.h"
#include "agent/providers/json_util.h"

namespace moat::agent::providers {

class DecoderBase : public StreamDecoder {
 public:
  std::optional<StreamFailure> failure() const final { return failure_; }

 protected:
  explicit DecoderBase(DecoderContext ctx) : ctx_(std::move(ctx)) {}

  // The event's data as a JSON object; otherwise nothing, and a malformed_chunk failure that
  // says `what`.
  std::optional<json> data_object(const SseEvent& ev, const char* what) {
    auto j = parse_json(ev.data);
    if (j && j->is_object()) return j;
    set_failure({502, "malformed_chunk", what});
    return std::nullopt;
  }

  // The failure recorded first is the one reported.
  void set_failure(StreamFailure f) {
    if (!failure_) failure_ = std::move(f);
  }

  // Appends a piece of the answer's text (or reasoning) and shows it as it arrives.
  void append_piece(std::string& acc, const std::string& piece, bool reasoning) const {
    acc += piece;
    if (!ctx_.stream || piece.empty()) return;
    const auto& show = reasoning ? ctx_.stream->on_reasoning : ctx_.stream->on_text;
    if (show) show(piece);
  }

  // The assistant message in moat's shape (agent/provider.h) around what the stream held.
  Message answer(json content, const std::string& stop_reason, json usage) const {
    return {{"role", "assistant"},       {"content", std::move(content)},
            {"stopReason", stop_reason}, {"usage", std::move(usage)},
            {"provider", ctx_.provider}, {"model", ctx_.model.empty() ? model_ : ctx_.model}};
  }

  DecoderContext ctx_;
  std::string model_;     // the model the stream names
  json error_ = nullptr;  // the error object the stream sent, as sent
  size_t data_events_ = 0;
  std::optional<StreamFailure> failure_;
};

}  // namespace moat::agent::providers
