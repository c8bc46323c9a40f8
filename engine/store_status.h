// StoreStatus: a LevelDB status as a gpulse Status. LevelDB keeps the errno
// of a failed write only in its message, so a full disk ("No space left on
// device", "Disk quota exceeded") is told apart there: it is NoSpace, which
// the engine waits out (docs/operations.md, "Failure modes"); any other
// failure is IOError.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "leveldb/status.h"
#include "storage/status.h"

namespace gpulse::engine {

inline Status StoreStatus(std::string_view what, const leveldb::Status& s) {
  if (s.ok()) return Status::Ok();
  std::string message = std::string(what) + ": " + s.ToString();
  const std::string_view text = message;
  if (text.find("No space left on device") != std::string_view::npos ||
      text.find("Disk quota exceeded") != std::string_view::npos) {
    return Status::NoSpace(std::move(message));
  }
  return Status::IOError(std::move(message));
}

}  // namespace gpulse::engine
