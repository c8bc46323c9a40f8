// Authenticator: checks the credentials of a request against the configured
// tokens. With no tokens configured, authentication is off (the default, for
// a loopback bind) and every request is allowed.
//
// Credentials are read the ways InfluxDB clients send them:
//   Authorization: Token <token>          (2.x clients, Telegraf)
//   Authorization: Bearer <token>
//   Authorization: Basic base64(user:token)  (1.x clients; the password is the token)
//   ?u=<user>&p=<token>                   (1.x query parameters)
//
// Thread safety: immutable after construction; Check may run on any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"

namespace gpulse::server {

enum class AuthResult {
  kAllowed,
  kUnauthenticated,  // no credentials or unknown token: 401
  kForbidden,        // a known token without the scope: 403
};

enum class Access { kRead, kWrite };

class Authenticator {
 public:
  explicit Authenticator(std::vector<TokenConfig> tokens) : tokens_(std::move(tokens)) {}

  bool enabled() const { return !tokens_.empty(); }

  // `authorization` is the header value (may be empty); `password` the `p`
  // query parameter (may be empty); `database` what the request touches
  // ("" for requests that touch none, such as /metrics: any valid token).
  AuthResult Check(std::string_view authorization, std::string_view password,
                   std::string_view database, Access access) const;

 private:
  const TokenConfig* Find(std::string_view token) const;

  std::vector<TokenConfig> tokens_;
};

}  // namespace gpulse::server
