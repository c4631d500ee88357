// agent/rpc_event_schema.h: the events docs/events.md documents, field by field, as the
// console checks the loop's lines against them before they reach an `--rpc` client (issue 26,
// item 2: a compromised loop could write any line, an `ask` among them).
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <string_view>

namespace moat::agent {

// A field's JSON types, as docs/events.md names them ("string or null").
enum EventFieldType : unsigned {
  kFieldString = 1u << 0,
  kFieldInteger = 1u << 1,
  kFieldNumber = 1u << 2,
  kFieldBoolean = 1u << 3,
  kFieldObject = 1u << 4,
  kFieldArray = 1u << 5,
  kFieldNull = 1u << 6,
};

struct EventField {
  std::string_view event;  // the event's `type`
  std::string_view field;
  unsigned types;          // EventFieldType bits
  bool always;             // "always" in the docs' table; else "optional"
};

// Every row of docs/events.md's tables in "The event stream" and "RPC events"
// (tests/integration/e2e/rpc_test.cc holds the docs and this table to each other).
std::span<const EventField> documented_event_fields();

// "" when `e` is an object whose `type` is a documented event and whose fields are as its
// table says (no other field, every "always" one, each of a listed type); else what is
// wrong, naming the type or field (ASCII, at most 80 bytes of a name), never a value.
std::string event_problem(const nlohmann::json& e);

}  // namespace moat::agent
