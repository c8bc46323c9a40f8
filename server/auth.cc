#include "server/auth.h"

#include <algorithm>
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

DatabaseScope::DatabaseScope(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (n == "*") {
      everything_ = true;
    } else if (!n.empty() && std::find(names_.begin(), names_.end(), n) == names_.end()) {
      names_.push_back(n);
    }
  }
  if (everything_) names_.clear();
}

DatabaseScope DatabaseScope::Everything() {
  DatabaseScope s;
  s.everything_ = true;
  return s;
}

bool DatabaseScope::Covers(std::string_view database) const {
  if (everything_) return true;
  if (database.empty() || database == "*") return false;
  for (const std::string& n : names_) {
    if (n == database) return true;
  }
  return false;
}

std::string DatabaseScope::Sole() const { return names_.size() == 1 ? names_[0] : std::string(); }

std::string DatabaseScope::Describe() const {
  if (everything_) return "every database";
  if (names_.empty()) return "no database";
  std::string out;
  for (const std::string& n : names_) out += (out.empty() ? "" : ", ") + n;
  return out;
}

AuthResult Authenticator::Authenticate(std::string_view authorization, std::string_view password,
                                       Grant* grant) const {
  if (!enabled()) {
    *grant = {DatabaseScope::Everything(), DatabaseScope::Everything()};
    return AuthResult::kAllowed;
  }
  std::string token = TokenFromHeader(authorization);
  if (token.empty()) token = std::string(password);
  if (token.empty()) return AuthResult::kUnauthenticated;
  const TokenConfig* t = Find(token);
  if (t == nullptr) return AuthResult::kUnauthenticated;
  *grant = {DatabaseScope(t->read), DatabaseScope(t->write), t->name};
  return AuthResult::kAllowed;
}

}  // namespace gpulse::server
