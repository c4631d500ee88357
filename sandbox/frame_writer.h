// sandbox/frame_writer.h: the frames moatd sends one client, written by a thread of their own
// so that no thread that enforces a limit (a call's deadline and cancel, the frame reader)
// ever blocks on a client that stopped reading.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "sandbox/protocol.h"

namespace moat::sandbox {

class FrameWriter {
 public:
  // `fd` is the connected client socket (borrowed; it outlives the writer). A client that
  // takes no byte for `stall_timeout` while frames wait for it is disconnected.
  FrameWriter(int fd, std::chrono::milliseconds stall_timeout);
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;
  // Writes what is still queued (each write bounded by the stall timeout), then stops.
  ~FrameWriter();

  // Sends one encoded frame, or what the socket does not take at once is queued for the
  // writer thread; never blocks. A frame that would pass kMaxQueuedBytes
  // (protocol.h) disconnects the client; after a disconnect, frames are dropped.
  void push(std::string frame);

  // Waits until every queued frame is written (each bounded by the stall timeout), then shuts
  // the socket down: the client reads them all, then EOF, while the caller still holds what it
  // frees after (a session's state after its bye's answer). Nothing is sent after it.
  void close();

  // Whether the client was disconnected for not reading (or went away).
  bool disconnected() const;

 private:
  void loop();
  // Writes all of `frame` or returns false (the client stalled or went away).
  bool write_frame(const std::string& frame);
  // Shuts the socket down both ways: the connection's reader sees EOF and ends the session,
  // which cancels its calls. Called with mu_ held.
  void disconnect_locked(const char* why);

  const int fd_;
  const std::chrono::milliseconds stall_timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;  // the thread holds a frame it took off the queue
  bool stopping_ = false;
  bool disconnected_ = false;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace moat::sandbox
