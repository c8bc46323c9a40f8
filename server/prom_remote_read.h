// Prometheus remote read (POST /api/v1/read): a ReadRequest's queries in,
// the samples of the series they select out, so that a Prometheus with a
// `remote_read` section can query gpulse as its history.
// docs/http-api.md, "Remote read".
//
//   RemoteReadRequest request;
//   Status s = ParseRemoteRead(body, max_bytes, &request);
//   RemoteReadWriter out(request.streamed);
//   for each query i: out.Add(i, series_of_query_i);
//   out.Finish() -> the body, out.content_type(), out.content_encoding()
//
// Two answers, as the client accepts (ReadRequest.accepted_response_types,
// the first gpulse has): SAMPLES, one ReadResponse block-compressed with
// snappy; STREAMED_XOR_CHUNKS, ChunkedReadResponse frames (a uvarint
// length, a big-endian CRC-32C, the message), each one series or a part of
// one, its samples in Prometheus' XOR chunks of at most 120 samples.
//
// Thread safety: plain functions; a RemoteReadWriter is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "query/promeval/value.h"
#include "query/promql/ast.h"
#include "storage/status.h"

namespace gpulse::server {

struct RemoteReadQuery {
  int64_t start = 0;  // ms, both included
  int64_t end = 0;
  std::vector<query::promql::LabelMatcher> matchers;
};

struct RemoteReadRequest {
  std::vector<RemoteReadQuery> queries;
  bool streamed = false;  // STREAMED_XOR_CHUNKS rather than SAMPLES
};

// InvalidArgument naming what is wrong: a body that is not snappy or not a
// ReadRequest, an unknown matcher type, a query that ends before it starts,
// only response types gpulse does not have; ResourceExhausted when the body
// inflates past `max_bytes`. (The matchers themselves are checked as they
// run: query::promeval::ReadSamples.)
Status ParseRemoteRead(std::string_view body, size_t max_bytes, RemoteReadRequest* out);

// Prometheus' XOR chunk of `times` and `values` (at most 65,535 samples):
// a big-endian sample count, then the first time as a varint and value as
// 64 bits, the second time's delta as a uvarint, then deltas of deltas in
// 1, 16, 20, 24 or 68 bits and values as XORs with the previous one.
std::string EncodeXorChunk(std::span<const int64_t> times, std::span<const double> values);

// The answer's body, built query by query.
class RemoteReadWriter {
 public:
  // Samples a chunk holds (Prometheus' own), and the size past which a
  // streamed frame is cut (Prometheus' default --storage.remote.read-max-
  // bytes-in-frame).
  static constexpr size_t kChunkSamples = 120;
  static constexpr size_t kFrameBytes = 1 << 20;

  explicit RemoteReadWriter(bool streamed);
  ~RemoteReadWriter();
  RemoteReadWriter(const RemoteReadWriter&) = delete;
  RemoteReadWriter& operator=(const RemoteReadWriter&) = delete;

  // The series of query `index`, sorted by labels; queries in order.
  void Add(size_t index, std::span<const query::promeval::RawSeries> series);
  // The body; the writer is spent.
  std::string Finish();
  const char* content_type() const;
  // "snappy", or "" for a stream.
  const char* content_encoding() const { return streamed_ ? "" : "snappy"; }

 private:
  struct Samples;
  bool streamed_;
  std::unique_ptr<Samples> samples_;  // SAMPLES: the ReadResponse so far
  std::string stream_;                // STREAMED_XOR_CHUNKS: the frames so far
};

}  // namespace gpulse::server
