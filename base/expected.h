// Errors as values at API and storage boundaries.
//
// C++20 has no std::expected (it arrives in C++23, and GCC 12 lacks it), so jobctl carries this
// small stand-in with the same spirit: a function that can fail returns Expected<T> (a value or an
// Error) or Status (nothing or an Error); both are [[nodiscard]], so an ignored failure is a
// compiler warning. Header-only, standard library only: train/ builds alone and uses it too.
//
// Thread safety: plain value types; same rules as std::variant.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "base/error_code.h"

namespace jobctl {

// What went wrong, in words a user can act on.
//   code    the kind of failure (base/error_code.h), what callers branch on
//   message a sentence for people
//   field   the dotted path of the offending input field ("train.epochs"), empty when none applies
struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::string field;
};

inline Error make_error(ErrorCode code, std::string message, std::string field = {}) {
  return Error{code, std::move(message), std::move(field)};
}

// Wraps an Error so that `return Unexpected{err};` reads like std::unexpected.
template <class E = Error>
struct Unexpected {
  E error;
};
template <class E>
Unexpected(E) -> Unexpected<E>;

template <class T, class E = Error>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}       // NOLINT: implicit by design
  Expected(Unexpected<E> u) : v_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT
  Expected(E error) requires(!std::is_same_v<T, E>)                           // NOLINT
      : v_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& { assert(!has_value()); return std::get<1>(v_); }
  E&& error() && { assert(!has_value()); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, E> v_;
};

// Success with no value, or an Error.
template <class E>
class [[nodiscard]] Expected<void, E> {
 public:
  Expected() = default;
  Expected(Unexpected<E> u) : err_(std::move(u.error)), ok_(false) {}  // NOLINT
  Expected(E error) : err_(std::move(error)), ok_(false) {}            // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const& { assert(!ok_); return err_; }
  E&& error() && { assert(!ok_); return std::move(err_); }

 private:
  E err_{};
  bool ok_ = true;
};

using Status = Expected<void, Error>;

inline Status ok_status() { return Status{}; }

}  // namespace jobctl
