// sandbox/reply_frame.cc: moatd's replies as frames, with a stand-in for an oversized one.
#include "sandbox/reply_frame.h"

#include "base/log.h"
#include "sandbox/protocol.h"
#include "tools/tool.h"

namespace moat::sandbox {

using nlohmann::json;

EncodedReply encode_reply(const json& m, pid_t peer_pid) {
  auto encoded = try_encode_frame(m);
  if (encoded) return {std::move(*encoded), false};
  MOAT_LOG_ERROR("reply to pid %d: %s", peer_pid, encoded.error().message().c_str());
  const std::string type = m.value("type", "");
  if (type == "result") {
    return {encode_frame(ResultMsg{
                m.value("id", ""),
                tools::ToolResult::error("the result exceeded the protocol's frame limit: " +
                                         encoded.error().message())}
                             .to_json()),
            false};
  }
  return {encode_frame(
              ErrorMsg{"moatd's '" + type + "' reply: " + encoded.error().message(), "protocol", ""}
                  .to_json()),
          true};
}

}  // namespace moat::sandbox
