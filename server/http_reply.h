// The answers the HTTP API's endpoints share (server/http_api.cc and
// server/http_api_write.cc): JSON bodies, errors as {"error": "..."}, and
// 204. Internal to server/.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/http_server.h"

namespace gpulse::server {

Response Json(http::status status, unsigned version, const nlohmann::json& body);
Response Error(http::status status, unsigned version, const std::string& message);
Response NoContent(unsigned version);

}  // namespace gpulse::server
