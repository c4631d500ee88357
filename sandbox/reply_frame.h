// sandbox/reply_frame.h: a reply to a client as frame bytes, or (when it would break the frame
// limit) the short reply that stands in for it.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <string>

namespace moat::sandbox {

struct EncodedReply {
  std::string bytes;
  bool close_after = false;  // the stand-in was an error frame: the connection ends with it
};

// Validation bounds every field a reply echoes (protocol.h); this is the net under it: an
// oversized reply becomes a short error, for this client only, never an abort. A result
// becomes an error result for its call (the session goes on); any other reply becomes an
// error frame after which the connection is closed. `peer_pid` names the client in the log.
EncodedReply encode_reply(const nlohmann::json& m, pid_t peer_pid);

}  // namespace moat::sandbox
