// The answers the HTTP API's endpoints share (server/http_api.cc and
// server/http_api_write.cc): JSON bodies, errors as {"error": "..."}, and
// 204, and the times and durations their parameters take. Internal to server/.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/http_server.h"

namespace gpulse::server {

Response Json(http::status status, unsigned version, const nlohmann::json& body);
Response Error(http::status status, unsigned version, const std::string& message);
Response NoContent(unsigned version);

// A time as Prometheus takes one: Unix seconds with a fraction, or RFC 3339;
// bounded where a double still holds every millisecond (past the year 5000).
bool ParsePromTime(const std::string& text, int64_t* ms);
// A duration as Prometheus takes one: seconds with a fraction, or 5m, 1h30m.
bool ParsePromStep(const std::string& text, int64_t* ms);

}  // namespace gpulse::server
