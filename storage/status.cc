#include "storage/status.h"

namespace gpulse {

namespace {
const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kNotFound:
      return "NotFound";
    case Status::Code::kCorruption:
      return "Corruption";
    case Status::Code::kInvalidArgument:
      return "InvalidArgument";
    case Status::Code::kIOError:
      return "IOError";
    case Status::Code::kBusy:
      return "Busy";
    case Status::Code::kResourceExhausted:
      return "ResourceExhausted";
    case Status::Code::kCancelled:
      return "Cancelled";
    case Status::Code::kPermissionDenied:
      return "PermissionDenied";
    case Status::Code::kNoSpace:
      return "NoSpace";
  }
  return "Unknown";
}
}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + msg_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + msg_);
}

}  // namespace gpulse
