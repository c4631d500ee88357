// sessions/message_list.h: the context's messages without copying them out of the session.
//
// A context of a long session holds tens of thousands of messages, and the loop builds one
// before every model call: copying each message out of the store cost more than the call's
// own work (issue 19). A MessageList refers to messages that live elsewhere and owns only
// the few it makes itself (a compaction's summary, a branch summary, a test's messages),
// shared between copies. A message of a session's entry is referred to by the store and its
// index: it stays the line's bytes until something reads it as nlohmann::json, so a
// request body made from the bytes (sessions/message_dom.h) never builds the JSON object.
#pragma once

#include <nlohmann/json.hpp>

#include <boost/iterator/transform_iterator.hpp>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "sessions/message.h"

namespace moat::sessions {


class MessageList {
 public:
  // One message: a JSON object held elsewhere, or the `message` member of a store's entry.
  struct Item {
    const Message* json = nullptr;
    const MessageSource* store = nullptr;
    size_t entry = 0;
  };
  struct Resolve {
    const Message& operator()(const Item& item) const;
  };
  using const_iterator = boost::transform_iterator<Resolve, std::vector<Item>::const_iterator>;

  MessageList() = default;
  // Owns copies of `messages` (tests, one-off requests).
  MessageList(std::initializer_list<Message> messages) {
    for (const Message& m : messages) push_back(m);
  }
  MessageList(std::vector<Message> messages) {  // NOLINT: implicit, owns what it is given
    items_.reserve(messages.size());
    for (Message& m : messages) push_back(std::move(m));
  }

  // Refers to `m`, which must outlive this list and every copy of it.
  void push_ref(const Message& m) { items_.push_back({&m, nullptr, 0}); }
  // Refers to the `message` member of `store`'s entry `index`, which must have one (the
  // store outlives this list and every copy of it).
  void push_entry(const MessageSource& store, size_t index) {
    items_.push_back({nullptr, &store, index});
  }
  // Owns `m`.
  void push_back(Message m) {
    owned_.push_back(std::make_shared<const Message>(std::move(m)));
    items_.push_back({owned_.back().get(), nullptr, 0});
  }
  void reserve(size_t n) { items_.reserve(n); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // Reading a store's message as JSON parses it (once: the store keeps it).
  const Message& operator[](size_t i) const { return Resolve()(items_[i]); }
  const Message& back() const { return Resolve()(items_.back()); }
  const_iterator begin() const { return const_iterator(items_.begin(), Resolve()); }
  const_iterator end() const { return const_iterator(items_.end(), Resolve()); }
  // Where message i lives, without reading it.
  const Item& item(size_t i) const { return items_[i]; }

  // Messages [from, size()): the same references, no copy.
  MessageList tail(size_t from) const {
    MessageList out;
    out.owned_ = owned_;
    out.items_.assign(items_.begin() + static_cast<std::ptrdiff_t>(from), items_.end());
    return out;
  }
  // Deep copies, for a caller that keeps messages past the life of what they refer to.
  std::vector<Message> to_vector() const { return std::vector<Message>(begin(), end()); }

 private:
  std::vector<Item> items_;
  std::vector<std::shared_ptr<const Message>> owned_;
};

}  // namespace moat::sessions
