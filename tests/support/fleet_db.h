// Test helpers for the fleet statements: a quiet data directory, and the
// simulator written into it through the public write API.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/query.h"

namespace gpulse::test {

// A Db on `path` that logs nothing and never syncs (tests only).
inline std::unique_ptr<Db> OpenQuietDb(const std::string& path) {
  Options o;
  o.info_log = [](std::string_view) {};
  o.sync_policy = SyncPolicy::kNone;
  std::unique_ptr<Db> db;
  const Status s = Db::Open(o, path, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return db;
}

// Runs `q` with now() at `now_ns` (0: the clock) and returns its first
// statement's result; a text that does not parse fails the test.
inline StatementResult RunFirst(Db* db, const std::string& q, int64_t now_ns = 0) {
  QueryOptions options;
  options.now_ns = now_ns;
  QueryResult r;
  const Status s = gpulse::Query(db, q, options, &r);
  EXPECT_TRUE(s.ok()) << q << ": " << s.ToString();
  return r.statements.empty() ? StatementResult{} : std::move(r.statements[0]);
}

// Simulator options for a small fleet with incidents given as on the
// command line ("thermal@1d/6h:node").
inline fleet::SimOptions SmallFleet(int nodes, int days, uint64_t seed, int64_t start_ns,
                                    const std::vector<std::string>& incidents = {}) {
  fleet::SimOptions o;
  o.nodes = nodes;
  o.days = days;
  o.seed = seed;
  o.start_ns = start_ns;
  for (const std::string& text : incidents) {
    fleet::IncidentRequest r;
    std::string error;
    EXPECT_TRUE(fleet::ParseIncidentRequest(text, &r, &error)) << text << ": " << error;
    o.incidents.push_back(r);
  }
  return o;
}

// Plans and emits `options` into `db` on two threads.
inline void SimulateInto(Db* db, const fleet::SimOptions& options) {
  std::unique_ptr<fleet::Simulator> sim;
  const Status created = fleet::Simulator::Create(options, &sim);
  ASSERT_TRUE(created.ok()) << created.ToString();
  struct Sink final : fleet::PointSink {
    explicit Sink(Db* d) : db(d) {}
    Status Write(std::span<const PointRef> points) override { return db->Write(points); }
    Db* db;
  } sink(db);
  const Status emitted = sim->Emit(&sink, 2, {}, nullptr);
  ASSERT_TRUE(emitted.ok()) << emitted.ToString();
}

}  // namespace gpulse::test
