// Result<T, E>: a value or a typed error, never an exception for an expected outcome.
// C++20 has no std::expected; this is the small subset cairn needs.
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace cairn {

template <class E>
struct Failure {
  E error;
};

template <class E>
Failure<std::decay_t<E>> fail(E&& e) {
  return {std::forward<E>(e)};
}

template <class T, class E>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Failure<E> f) : v_(std::in_place_index<1>, std::move(f.error)) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  E&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, E> v_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(Failure<E> f) : e_(std::move(f.error)) {}  // NOLINT: implicit by design

  bool ok() const noexcept { return !e_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const E& error() const& {
    assert(!ok());
    return *e_;
  }
  E&& error() && {
    assert(!ok());
    return std::move(*e_);
  }

 private:
  std::optional<E> e_;
};

// The failure of `r`, to hand on unchanged: `co_return failureOf(r);`.
template <class T, class E>
Failure<E> failureOf(const Result<T, E>& r) {
  return Failure<E>{r.error()};
}

}  // namespace cairn

// Evaluates `expr` (a Result) and, if it failed, returns its failure from the enclosing
// function (CAIRN_TRY) or coroutine (CAIRN_CO_TRY); its value, if any, is dropped.
#define CAIRN_TRY(expr)                                       \
  do {                                                        \
    auto cairnTried_ = (expr);                                \
    if (!cairnTried_) return ::cairn::failureOf(cairnTried_); \
  } while (false)
#define CAIRN_CO_TRY(expr)                                       \
  do {                                                           \
    auto cairnTried_ = (expr);                                   \
    if (!cairnTried_) co_return ::cairn::failureOf(cairnTried_); \
  } while (false)
// Evaluates `expr` (a Result<T>) and assigns its value to `lhs`, or returns its failure from
// the enclosing function (CAIRN_ASSIGN) or coroutine (CAIRN_CO_ASSIGN).
#define CAIRN_ASSIGN(lhs, expr)                                     \
  do {                                                              \
    auto cairnAssigned_ = (expr);                                   \
    if (!cairnAssigned_) return ::cairn::failureOf(cairnAssigned_); \
    lhs = std::move(*cairnAssigned_);                               \
  } while (false)
#define CAIRN_CO_ASSIGN(lhs, expr)                                     \
  do {                                                                 \
    auto cairnAssigned_ = (expr);                                      \
    if (!cairnAssigned_) co_return ::cairn::failureOf(cairnAssigned_); \
    lhs = std::move(*cairnAssigned_);                                  \
  } while (false)
