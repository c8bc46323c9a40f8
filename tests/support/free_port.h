// FreePort: a loopback TCP port nobody listens on right now (the kernel's
// choice), for tests that start a server process on a port of their own.
//
// Thread safety: a free function. The port may be taken again between the
// call and its use; on a test machine that is rare enough.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

namespace gpulse::test {

inline uint16_t FreePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(
      io, {boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(0)});
  return acceptor.local_endpoint().port();
}

}  // namespace gpulse::test
