// base/result.h: Result<T>, shaped like std::expected, the one error model of moat.
#pragma once

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace moat {

// An expected failure: an errno (or 0) plus what we were doing.
struct Error {
  int code = 0;         // errno, or 0 when the failure is not a syscall's
  std::string context;  // what we were doing: "openat2(.git/hooks)"

  static Error from_errno(std::string_view call, int err, std::string_view arg = {}) {
    Error e;
    e.code = err;
    e.context = std::string(call);
    if (!arg.empty()) {
      e.context += "(";
      e.context += arg;
      e.context += ")";
    }
    return e;
  }
  static Error msg(std::string text) { return Error{0, std::move(text)}; }

  // "openat2(.git/hooks): Permission denied", or just the context when code is 0.
  std::string message() const {
    if (code == 0) return context;
    return context + ": " + std::strerror(code);
  }
  // Adds outer context when an error crosses a layer: "load policy: open(x): ENOENT".
  Error with_context(std::string_view outer) const {
    return Error{code, std::string(outer) + ": " + context};
  }
};

struct Failure {
  Error error;
};  // plays std::unexpected's role
inline Failure fail(Error e) { return Failure{std::move(e)}; }
inline Failure fail(std::string text) { return Failure{Error::msg(std::move(text))}; }

template <typename T>
class [[nodiscard]] Result {  // no default ctor on purpose
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Failure f) : v_(std::in_place_index<1>, std::move(f.error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  template <typename U>
  T value_or(U&& other) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(other));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure f) : err_(std::move(f.error)) {}
  bool has_value() const { return !err_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void value() const {}
  const Error& error() const { return *err_; }

 private:
  std::optional<Error> err_;
};

}  // namespace moat

#define MOAT_CONCAT_INNER_(a, b) a##b
#define MOAT_CONCAT_(a, b) MOAT_CONCAT_INNER_(a, b)

// Propagates a failure; an ordinary statement (no GNU statement expressions).
#define MOAT_TRY(expr)                                                               \
  do {                                                                               \
    if (auto moat_try_ = (expr); !moat_try_) return ::moat::fail(moat_try_.error()); \
  } while (0)

// Expands to several statements: never use it as an unbraced if-body.
#define MOAT_ASSIGN_OR_RETURN(lhs, expr)                            \
  auto MOAT_CONCAT_(moat_aor_, __LINE__) = (expr);                  \
  if (!MOAT_CONCAT_(moat_aor_, __LINE__))                           \
    return ::moat::fail(MOAT_CONCAT_(moat_aor_, __LINE__).error()); \
  lhs = std::move(MOAT_CONCAT_(moat_aor_, __LINE__)).value()
