#include "ingest/lp_batch.h"

#include <algorithm>

namespace gpulse::ingest {

void LineProtocolBatch::Parse(std::string_view body, const LineProtocolParser::Options& options,
                              std::string_view database) {
  owned_.clear();
  pending_.clear();
  tags_.clear();
  fields_.clear();
  lines_.clear();
  points_.clear();
  errors_.clear();
  error_count_ = 0;
  max_errors_ = options.max_errors;
  const auto stable = [&](std::string_view v) -> std::string_view {
    const bool in_body =
        v.data() >= body.data() && v.data() + v.size() <= body.data() + body.size();
    return v.empty() || in_body ? v : std::string_view(owned_.emplace_back(v));
  };
  {
    // Sized from the line count up front: growing these by doubling over a
    // 1 MiB body cost a measurable share of the write path in copies.
    const size_t line_count = static_cast<size_t>(std::count(body.begin(), body.end(), '\n')) + 1;
    pending_.reserve(line_count);
    lines_.reserve(line_count);
    tags_.reserve(line_count * 6);
    fields_.reserve(line_count * 8);
  }
  parser_.Parse(
      body, options,
      [&](const PointView& v) {
        Pending p{stable(v.measurement), tags_.size(), 0, fields_.size(), 0, v.timestamp_ns};
        bool has_db_tag = false;
        for (const TagView& t : v.tags) {
          tags_.push_back(TagRef{stable(t.key), stable(t.value)});
          has_db_tag = has_db_tag || t.key == "db";
        }
        if (!database.empty() && !has_db_tag) tags_.push_back(TagRef{"db", database});
        p.tag_count = tags_.size() - p.first_tag;
        for (const FieldView& f : v.fields) {
          FieldValueRef value = f.float_value;
          switch (f.type) {
            case FieldType::kFloat:
              break;
            case FieldType::kInt:
              value = f.int_value;
              break;
            case FieldType::kUint:
              value = f.uint_value;
              break;
            case FieldType::kBool:
              value = f.bool_value;
              break;
            case FieldType::kString:
              value = stable(f.string_value);
              break;
          }
          fields_.push_back(FieldRef{stable(f.key), value});
        }
        p.field_count = fields_.size() - p.first_field;
        pending_.push_back(p);
        lines_.push_back(v.line);
      },
      &errors_, &error_count_);
  points_.reserve(pending_.size());
  for (const Pending& p : pending_) {
    points_.push_back(PointRef{
        p.measurement, std::span<const TagRef>(tags_).subspan(p.first_tag, p.tag_count),
        std::span<const FieldRef>(fields_).subspan(p.first_field, p.field_count), p.timestamp_ns});
  }
}

void LineProtocolBatch::RejectWhere(const std::function<std::string(const PointRef&)>& refuse) {
  size_t kept = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    std::string reason = refuse(points_[i]);
    if (reason.empty()) {
      points_[kept] = points_[i];
      lines_[kept] = lines_[i];
      ++kept;
      continue;
    }
    ++error_count_;
    if (errors_.size() < max_errors_) errors_.push_back({lines_[i], 1, std::move(reason)});
  }
  points_.resize(kept);
  lines_.resize(kept);
}

}  // namespace gpulse::ingest
