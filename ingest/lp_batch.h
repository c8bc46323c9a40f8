// LineProtocolBatch: a body of line protocol parsed into the engine's
// zero-copy points (PointRef), for one Db::Write: what the HTTP write
// endpoints and `gpulse import` both do with a body.
//
// The points reference the body wherever they can: no string is copied
// except text the parser unescaped (it lives for one line only in the
// parser), which the batch keeps. So the body must outlive the batch's use.
//
// Thread safety: none; one batch per thread.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/line_protocol.h"

namespace gpulse::ingest {

class LineProtocolBatch {
 public:
  // Parses `body` (replacing what the batch held). Points without a `db` tag
  // get db=<database> when `database` is not empty (what /write?db= does).
  void Parse(std::string_view body, const LineProtocolParser::Options& options,
             std::string_view database);

  // Takes out every point for which `refuse` returns a reason, as a bad line
  // with that reason (column 1); the other points keep their order. For
  // checks that need the whole point, such as the database its `db` tag
  // names against the writer's scope.
  void RejectWhere(const std::function<std::string(const PointRef&)>& refuse);

  std::span<const PointRef> points() const { return points_; }
  // The body line point i started on (1-based).
  size_t line_of(size_t i) const { return lines_[i]; }
  // The bad lines (up to options.max_errors) and how many there were.
  const std::vector<LineError>& errors() const { return errors_; }
  size_t error_count() const { return error_count_; }

 private:
  struct Pending {
    std::string_view measurement;
    size_t first_tag, tag_count, first_field, field_count;
    int64_t timestamp_ns;
  };
  LineProtocolParser parser_;
  std::deque<std::string> owned_;
  std::vector<Pending> pending_;
  std::vector<TagRef> tags_;
  std::vector<FieldRef> fields_;
  std::vector<size_t> lines_;
  std::vector<PointRef> points_;
  std::vector<LineError> errors_;
  size_t error_count_ = 0;
  size_t max_errors_ = 0;
};

}  // namespace gpulse::ingest
