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

// The databases a token may reach with one kind of access. A scope of "*"
// covers every database, each one and all at once ("" in a query: data of
// every database, untagged data included). Any other scope covers exactly the
// databases it names, never "" and never "*".
class DatabaseScope {
 public:
  DatabaseScope() = default;
  explicit DatabaseScope(const std::vector<std::string>& names);
  static DatabaseScope Everything();

  bool everything() const { return everything_; }
  bool empty() const { return !everything_ && names_.empty(); }
  // Whether the scope covers `database`; "*" asks for every database.
  bool Covers(std::string_view database) const;
  // The one database the scope names, when it names exactly one: what a
  // request that names none goes to. Empty otherwise.
  std::string Sole() const;
  // The named databases (empty for everything()).
  const std::vector<std::string>& names() const { return names_; }
  // "dbA, dbB", "every database" or "no database", for error messages.
  std::string Describe() const;

 private:
  bool everything_ = false;
  std::vector<std::string> names_;
};

// What one request's credentials may do.
struct Grant {
  DatabaseScope read, write;
  std::string token_name;  // the token's configured name; empty when authentication is off

  const DatabaseScope& For(Access access) const { return access == Access::kRead ? read : write; }
};

class Authenticator {
 public:
  explicit Authenticator(std::vector<TokenConfig> tokens) : tokens_(std::move(tokens)) {}

  bool enabled() const { return !tokens_.empty(); }

  // Who the request is: kAllowed with *grant set (everything when
  // authentication is off), or kUnauthenticated. `authorization` is the
  // header value and `password` the `p` query parameter (either may be empty).
  AuthResult Authenticate(std::string_view authorization, std::string_view password,
                          Grant* grant) const;

 private:
  const TokenConfig* Find(std::string_view token) const;

  std::vector<TokenConfig> tokens_;
};

}  // namespace gpulse::server
