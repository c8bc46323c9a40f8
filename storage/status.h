// Status and Result<T>: how every layer of gpulse reports an expected error.
//
// A Status is OK or carries a code and a message that says what failed and
// where ("wal/000003.log offset 4096: bad checksum"). Exceptions never cross
// a public API; errors are values. Status is cheap to copy when OK.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gpulse {

class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound,
    kCorruption,
    kInvalidArgument,
    kIOError,
    kBusy,               // a resource is held by someone else (the data directory lock)
    kResourceExhausted,  // a configured bound was reached (head memory, query limits)
    kCancelled,          // the caller asked to stop (Ctrl-C, a client that went away)
    kPermissionDenied,   // the caller's scope does not cover what was asked (a database)
    kNoSpace,            // the disk (or a quota) is full: may succeed once space returns
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Busy(std::string msg) { return Status(Code::kBusy, std::move(msg)); }
  static Status ResourceExhausted(std::string msg) {
    return Status(Code::kResourceExhausted, std::move(msg));
  }

  static Status Cancelled(std::string msg) { return Status(Code::kCancelled, std::move(msg)); }
  static Status PermissionDenied(std::string msg) {
    return Status(Code::kPermissionDenied, std::move(msg));
  }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsResourceExhausted() const { return code_ == Code::kResourceExhausted; }
  bool IsCancelled() const { return code_ == Code::kCancelled; }
  bool IsPermissionDenied() const { return code_ == Code::kPermissionDenied; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  const std::string& message() const { return msg_; }

  // "Corruption: wal/000003.log offset 4096: bad checksum", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string msg_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace gpulse

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define GPULSE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::gpulse::Status gpulse_status_ = (expr);        \
    if (!gpulse_status_.ok()) return gpulse_status_; \
  } while (0)
