// sessions/message_list.h: the context's messages without copying them out of the session.
//
// A context of a long session holds tens of thousands of messages, and the loop builds one
// before every model call: copying each message out of the store cost more than the call's
// own work (issue 19). A MessageList refers to messages that live elsewhere (a store's
// entries, which never move once parsed) and owns only the few it makes itself (a
// compaction's summary, a branch summary, a test's messages), shared between copies.
#pragma once

#include <nlohmann/json.hpp>

#include <boost/iterator/indirect_iterator.hpp>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace moat::sessions {

using Message = nlohmann::json;  // agent/provider.h's message shape

class MessageList {
 public:
  using const_iterator = boost::indirect_iterator<std::vector<const Message*>::const_iterator>;

  MessageList() = default;
  // Owns copies of `messages` (tests, one-off requests).
  MessageList(std::initializer_list<Message> messages) {
    for (const Message& m : messages) push_back(m);
  }
  MessageList(std::vector<Message> messages) {  // NOLINT: implicit, owns what it is given
    refs_.reserve(messages.size());
    for (Message& m : messages) push_back(std::move(m));
  }

  // Refers to `m`, which must outlive this list and every copy of it.
  void push_ref(const Message& m) { refs_.push_back(&m); }
  // Owns `m`.
  void push_back(Message m) {
    owned_.push_back(std::make_shared<const Message>(std::move(m)));
    refs_.push_back(owned_.back().get());
  }
  void reserve(size_t n) { refs_.reserve(n); }

  size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  const Message& operator[](size_t i) const { return *refs_[i]; }
  const Message& back() const { return *refs_.back(); }
  const_iterator begin() const { return const_iterator(refs_.begin()); }
  const_iterator end() const { return const_iterator(refs_.end()); }

  // Messages [from, size()): the same references, no copy.
  MessageList tail(size_t from) const {
    MessageList out;
    out.owned_ = owned_;
    out.refs_.assign(refs_.begin() + static_cast<std::ptrdiff_t>(from), refs_.end());
    return out;
  }
  // Deep copies, for a caller that keeps messages past the life of what they refer to.
  std::vector<Message> to_vector() const { return std::vector<Message>(begin(), end()); }

 private:
  std::vector<const Message*> refs_;
  std::vector<std::shared_ptr<const Message>> owned_;
};

}  // namespace moat::sessions
