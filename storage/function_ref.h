// FunctionRef: a non-owning reference to something callable, for a callback
// the callee only calls before it returns. Unlike std::function it never
// allocates: a lambda that captures a few locals by reference is more than
// std::function keeps inline, and the read path makes several such
// callbacks a series.
//
// The callable must outlive the FunctionRef (pass a lambda as an argument,
// never keep the FunctionRef past the call).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace gpulse::storage {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): stands in for a callable
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace gpulse::storage
