// ServedTest: a test with a server of its own on a loopback port (TestServer
// over a scratch directory) and a client of it. A test sets config_ (tokens,
// limits) and calls StartServer, in SetUp or later; metrics and sources live
// as long as the test, across a restart (StopServer, StartServer).
//
// Thread safety: one test thread.
#pragma once

#include <gtest/gtest.h>

#include <optional>

#include "server/config.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse::test {

class ServedTest : public ::testing::Test {
 protected:
  // Starts the server on dir_ with config_ and a quiet Db, and connects
  // client_ to it. Use ASSERT_NO_FATAL_FAILURE(StartServer()) where the
  // test goes on after it.
  void StartServer() {
    UseQuietTestDb(&config_.db);
    const Status s = server_.Start(dir_.path(), config_, &metrics_, &sources_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    client_.emplace(server_.port());
  }

  storage::ScratchDir dir_;
  server::ServerConfig config_;
  server::ServerMetrics metrics_;
  server::SourceRegistry sources_;
  TestServer server_;
  std::optional<HttpClient> client_;
};

}  // namespace gpulse::test
