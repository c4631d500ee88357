// sessions/message_list.cc: a store's message read as JSON through the store (parsed once).
#include "sessions/message_list.h"

#include "base/check.h"

namespace moat::sessions {

const Message& MessageList::Resolve::operator()(const Item& item) const {
  if (item.json != nullptr) return *item.json;
  const Message* m = item.store->entry_message(item.entry);
  MOAT_CHECK(m != nullptr);  // push_entry's contract: the entry has a message
  return *m;
}

}  // namespace moat::sessions
