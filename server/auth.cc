#include "server/auth.h"

#include <boost/beast/core/detail/base64.hpp>

namespace gpulse::server {

namespace {

// Compares in time independent of where the strings first differ, so that a
// token cannot be guessed byte by byte from response times.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool HasScope(const std::vector<std::string>& scope, std::string_view database) {
  for (const std::string& s : scope) {
    if (s == "*" || database.empty() || s == database) return true;
  }
  return false;
}

// The token inside an Authorization header value, or "".
std::string TokenFromHeader(std::string_view header) {
  const auto after = [&](std::string_view scheme) -> std::string_view {
    if (header.size() > scheme.size() && header.substr(0, scheme.size()) == scheme) {
      return header.substr(scheme.size());
    }
    return {};
  };
  if (std::string_view t = after("Token "); !t.empty()) return std::string(t);
  if (std::string_view t = after("Bearer "); !t.empty()) return std::string(t);
  if (std::string_view b = after("Basic "); !b.empty()) {
    namespace base64 = boost::beast::detail::base64;
    std::string decoded(base64::decoded_size(b.size()), '\0');
    const auto [written, read] = base64::decode(decoded.data(), b.data(), b.size());
    (void)read;
    decoded.resize(written);
    const size_t colon = decoded.find(':');
    return colon == std::string::npos ? std::string() : decoded.substr(colon + 1);
  }
  return std::string();
}

}  // namespace

const TokenConfig* Authenticator::Find(std::string_view token) const {
  const TokenConfig* found = nullptr;
  for (const TokenConfig& t : tokens_) {
    if (SameSecret(t.token, token)) found = &t;
  }
  return found;
}

AuthResult Authenticator::Check(std::string_view authorization, std::string_view password,
                                std::string_view database, Access access) const {
  if (!enabled()) return AuthResult::kAllowed;
  std::string token = TokenFromHeader(authorization);
  if (token.empty()) token = std::string(password);
  if (token.empty()) return AuthResult::kUnauthenticated;
  const TokenConfig* t = Find(token);
  if (t == nullptr) return AuthResult::kUnauthenticated;
  const auto& scope = access == Access::kRead ? t->read : t->write;
  return HasScope(scope, database) ? AuthResult::kAllowed : AuthResult::kForbidden;
}

}  // namespace gpulse::server
