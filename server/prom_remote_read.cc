#include "server/prom_remote_read.h"

#include <snappy.h>

#include <algorithm>
#include <bit>
#include <boost/crc.hpp>
#include <cstring>
#include <utility>

#include "ingest/remote_write.h"
#include "prompb.pb.h"

namespace gpulse::server {

namespace {

// Bits appended most significant first, as Prometheus' bstream writes them.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}

  void Bit(bool b) { Bits(b ? 1 : 0, 1); }
  // The low `n` bits of `v` (n <= 64).
  void Bits(uint64_t v, int n) {
    while (n > 0) {
      if (free_ == 0) {
        out_->push_back('\0');
        free_ = 8;
      }
      const int take = n < free_ ? n : free_;
      const uint64_t part = (v >> (n - take)) & ((uint64_t{1} << take) - 1);
      out_->back() = static_cast<char>(static_cast<uint8_t>(out_->back()) |
                                       static_cast<uint8_t>(part << (free_ - take)));
      free_ -= take;
      n -= take;
    }
  }
  void Byte(uint8_t b) { Bits(b, 8); }
  void Uvarint(uint64_t v) {
    while (v >= 0x80) {
      Byte(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    Byte(static_cast<uint8_t>(v));
  }
  // Go's binary.PutVarint: zig-zag, then a uvarint.
  void Varint(int64_t v) {
    Uvarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }

 private:
  std::string* out_;
  int free_ = 0;  // bits left in the last byte
};

// Whether `x` fits the `n`-bit field of a delta of deltas: Prometheus'
// range, one more on the positive side than two's complement holds (the
// reader takes a value above 2^(n-1) as negative).
bool FitsBits(int64_t x, int n) {
  return -((int64_t{1} << (n - 1)) - 1) <= x && x <= (int64_t{1} << (n - 1));
}

class XorWriter {
 public:
  explicit XorWriter(std::string* out) : bits_(out) {}

  void Add(size_t i, int64_t t, double v) {
    const uint64_t bits = std::bit_cast<uint64_t>(v);
    if (i == 0) {
      bits_.Varint(t);
      bits_.Bits(bits, 64);
    } else if (i == 1) {
      delta_ = static_cast<uint64_t>(t - t_);
      bits_.Uvarint(delta_);
      Value(bits);
    } else {
      const uint64_t delta = static_cast<uint64_t>(t - t_);
      const auto dod = static_cast<int64_t>(delta - delta_);
      if (dod == 0) {
        bits_.Bit(false);
      } else if (FitsBits(dod, 14)) {
        bits_.Bits(0b10, 2);
        bits_.Bits(static_cast<uint64_t>(dod), 14);
      } else if (FitsBits(dod, 17)) {
        bits_.Bits(0b110, 3);
        bits_.Bits(static_cast<uint64_t>(dod), 17);
      } else if (FitsBits(dod, 20)) {
        bits_.Bits(0b1110, 4);
        bits_.Bits(static_cast<uint64_t>(dod), 20);
      } else {
        bits_.Bits(0b1111, 4);
        bits_.Bits(static_cast<uint64_t>(dod), 64);
      }
      delta_ = delta;
      Value(bits);
    }
    t_ = t;
    v_ = bits;
  }

 private:
  // The value as its XOR with the one before: 0 when equal; else 1, then 0
  // and the meaningful bits when they fit the previous window of leading
  // and trailing zeros, or 1, the leading zeros (5 bits), the meaningful
  // bits' count (6 bits, 64 written as 0) and the bits.
  void Value(uint64_t bits) {
    const uint64_t x = bits ^ v_;
    if (x == 0) {
      bits_.Bit(false);
      return;
    }
    bits_.Bit(true);
    int leading = std::countl_zero(x);
    const int trailing = std::countr_zero(x);
    if (leading >= 32) leading = 31;  // what 5 bits hold
    if (leading_ >= 0 && leading >= leading_ && trailing >= trailing_) {
      bits_.Bit(false);
      bits_.Bits(x >> trailing_, 64 - leading_ - trailing_);
      return;
    }
    leading_ = leading;
    trailing_ = trailing;
    bits_.Bit(true);
    bits_.Bits(static_cast<uint64_t>(leading), 5);
    const int meaningful = 64 - leading - trailing;
    bits_.Bits(static_cast<uint64_t>(meaningful), 6);  // 64 comes out as 0
    bits_.Bits(x >> trailing, meaningful);
  }

  BitWriter bits_;
  int64_t t_ = 0;
  uint64_t v_ = 0;
  uint64_t delta_ = 0;
  int leading_ = -1;  // no window yet
  int trailing_ = 0;
};

void AppendUvarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A frame of a streamed answer: the message's length, its CRC-32C
// (Castagnoli) big-endian, the message.
void AppendFrame(const prompb::ChunkedReadResponse& message, std::string* out) {
  const std::string bytes = message.SerializeAsString();
  AppendUvarint(bytes.size(), out);
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t sum = crc.checksum();
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(sum >> shift));
  out->append(bytes);
}

void SetLabels(const query::promeval::Labels& labels,
               google::protobuf::RepeatedPtrField<prompb::Label>* out) {
  for (const auto& l : labels) {
    prompb::Label* label = out->Add();
    label->set_name(l.name);
    label->set_value(l.value);
  }
}

Result<query::promql::MatchOp> MatchOpOf(prompb::LabelMatcher::Type type) {
  switch (type) {
    case prompb::LabelMatcher::EQ:
      return query::promql::MatchOp::kEqual;
    case prompb::LabelMatcher::NEQ:
      return query::promql::MatchOp::kNotEqual;
    case prompb::LabelMatcher::RE:
      return query::promql::MatchOp::kRegex;
    case prompb::LabelMatcher::NRE:
      return query::promql::MatchOp::kNotRegex;
    default:
      return Status::InvalidArgument("remote read: unknown label matcher type " +
                                     std::to_string(static_cast<int>(type)));
  }
}

}  // namespace

std::string EncodeXorChunk(std::span<const int64_t> times, std::span<const double> values) {
  std::string out(2, '\0');
  const size_t n = times.size() < 65535 ? times.size() : 65535;
  out[0] = static_cast<char>(n >> 8);
  out[1] = static_cast<char>(n & 0xff);
  XorWriter writer(&out);
  for (size_t i = 0; i < n; ++i) writer.Add(i, times[i], values[i]);
  return out;
}

Status ParseRemoteRead(std::string_view body, size_t max_bytes, RemoteReadRequest* out) {
  std::string inflated;
  GPULSE_RETURN_IF_ERROR(ingest::InflateSnappy(body, max_bytes, "remote read", &inflated));
  prompb::ReadRequest request;
  if (!request.ParseFromString(inflated)) {
    return Status::InvalidArgument("remote read body is not a protobuf ReadRequest");
  }
  out->streamed = false;
  if (request.accepted_response_types_size() > 0) {
    bool known = false;
    for (int type : request.accepted_response_types()) {
      if (type == prompb::ReadRequest::SAMPLES ||
          type == prompb::ReadRequest::STREAMED_XOR_CHUNKS) {
        out->streamed = type == prompb::ReadRequest::STREAMED_XOR_CHUNKS;
        known = true;
        break;
      }
    }
    if (!known) {
      return Status::InvalidArgument(
          "remote read: none of the accepted response types is one gpulse answers with "
          "(SAMPLES, STREAMED_XOR_CHUNKS)");
    }
  }
  for (int i = 0; i < request.queries_size(); ++i) {
    const prompb::Query& q = request.queries(i);
    RemoteReadQuery query;
    query.start = q.start_timestamp_ms();
    query.end = q.end_timestamp_ms();
    if (query.end < query.start) {
      return Status::InvalidArgument("remote read: query " + std::to_string(i) + " ends (" +
                                     std::to_string(query.end) + " ms) before it starts (" +
                                     std::to_string(query.start) + " ms)");
    }
    for (const prompb::LabelMatcher& m : q.matchers()) {
      auto op = MatchOpOf(m.type());
      if (!op.ok()) return op.status();
      query.matchers.push_back({m.name(), *op, m.value()});
    }
    out->queries.push_back(std::move(query));
  }
  return Status::Ok();
}

struct RemoteReadWriter::Samples {
  prompb::ReadResponse response;
};

RemoteReadWriter::RemoteReadWriter(bool streamed) : streamed_(streamed) {
  if (!streamed) samples_ = std::make_unique<Samples>();
}

RemoteReadWriter::~RemoteReadWriter() = default;

const char* RemoteReadWriter::content_type() const {
  return streamed_ ? "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
                   : "application/x-protobuf";
}

void RemoteReadWriter::Add(size_t index, std::span<const query::promeval::RawSeries> series) {
  if (!streamed_) {
    prompb::QueryResult* result = samples_->response.add_results();
    for (const auto& s : series) {
      prompb::TimeSeries* ts = result->add_timeseries();
      SetLabels(s.labels, ts->mutable_labels());
      for (size_t i = 0; i < s.times.size(); ++i) {
        prompb::Sample* sample = ts->add_samples();
        sample->set_timestamp(s.times[i]);
        sample->set_value(s.values[i]);
      }
    }
    return;
  }
  // One series a frame, cut into frames of about kFrameBytes when larger.
  for (const auto& s : series) {
    prompb::ChunkedReadResponse frame;
    frame.set_query_index(static_cast<int64_t>(index));
    prompb::ChunkedSeries* chunked = frame.add_chunked_series();
    SetLabels(s.labels, chunked->mutable_labels());
    size_t bytes = 0;
    for (size_t begin = 0; begin < s.times.size(); begin += kChunkSamples) {
      const size_t n = std::min(kChunkSamples, s.times.size() - begin);
      prompb::Chunk* chunk = chunked->add_chunks();
      chunk->set_min_time_ms(s.times[begin]);
      chunk->set_max_time_ms(s.times[begin + n - 1]);
      chunk->set_type(prompb::Chunk::XOR);
      chunk->set_data(EncodeXorChunk(std::span(s.times).subspan(begin, n),
                                     std::span(s.values).subspan(begin, n)));
      bytes += chunk->data().size() + 32;
      if (bytes >= kFrameBytes && begin + n < s.times.size()) {
        AppendFrame(frame, &stream_);
        chunked->clear_chunks();
        bytes = 0;
      }
    }
    if (chunked->chunks_size() > 0) AppendFrame(frame, &stream_);
  }
}

std::string RemoteReadWriter::Finish() {
  if (streamed_) return std::move(stream_);
  const std::string bytes = samples_->response.SerializeAsString();
  samples_.reset();
  std::string out;
  snappy::Compress(bytes.data(), bytes.size(), &out);
  return out;
}

}  // namespace gpulse::server
