#include "query/syntax/regex.h"

#include <string>

namespace gpulse::query {

Result<Regex> CompileRegex(std::string_view pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error is returned to the caller instead
  auto re =
      std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    return Status::InvalidArgument("bad regular expression /" + std::string(pattern) +
                                   "/: " + re->error());
  }
  return Regex(std::move(re));
}

}  // namespace gpulse::query
