// HTTP client: one plain-http request at a time, for the scraper's GETs and
// the webhook sender's POSTs. Each call opens its own connection and closes
// it: the callers talk to a target every few seconds at most, so a pool of
// kept-alive connections would buy nothing but state.
//
// Thread safety: HttpRequest keeps no state; call it from any thread.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace gpulse::server {

// What came back. Any status is a reply: deciding what a 404 or a 503 means
// is the caller's business.
struct HttpReply {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, verbatim; empty if absent
};

// Sends one `method` request for `url` (plain http://host[:port]/path) and
// reads the reply into *reply. `content_type` and `body` are the request's
// (an empty content_type sends no Content-Type header); `accept`, when not
// empty, is sent as the Accept header. `timeout` bounds connect, write and
// read together; a reply body over `max_bytes` is an error.
//
// Returns Ok whenever a reply was read, whatever its status. Errors
// (InvalidArgument for a URL that is not http://, IOError for resolve,
// connect, timeout and malformed replies) name the URL.
Status HttpRequest(boost::beast::http::verb method, const std::string& url,
                   std::string_view content_type, const std::string& body,
                   std::chrono::milliseconds timeout, uint64_t max_bytes, HttpReply* reply,
                   std::string_view accept = {});

}  // namespace gpulse::server
