// base/stop_flags.h: the flags that stop a running command, read as one. A call can be
// stopped for more than one reason (the person cancelled, the output ceiling was hit); the
// runner polls them together instead of a thread mirroring one flag into another.
#pragma once

#include <atomic>

namespace moat {

class StopFlags {
 public:
  // Implicit from one flag (or nullptr: never raised), so a single flag reads as before.
  StopFlags(const std::atomic<bool>* first = nullptr,  // NOLINT(google-explicit-constructor)
            const std::atomic<bool>* second = nullptr)
      : first_(first), second_(second) {}

  bool raised() const {
    return (first_ != nullptr && first_->load()) || (second_ != nullptr && second_->load());
  }

 private:
  const std::atomic<bool>* first_;
  const std::atomic<bool>* second_;
};

}  // namespace moat
