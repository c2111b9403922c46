#pragma once

// Token hash -> what it grants (project and scope), remembered for a time to live. Ingest checks a
// token on every request; the cache keeps that off the state store, and the
// TTL bounds how long a token revoked by another process (`sightline token
// revoke`, or a second server on a shared PostgreSQL store) keeps working
// here. Only tokens found valid are cached, so a token minted while the
// server runs works at its first request.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "auth/tokens.h"
#include "common/mutex.h"

namespace sightline {

//! Thread-safe.
class TokenCache {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  //! A zero TTL caches nothing. `clock` defaults to steady_clock::now (tests pass their own).
  explicit TokenCache(std::chrono::milliseconds ttl, Clock clock = nullptr);

  //! The grant of a hash put less than the TTL ago, else nullopt.
  std::optional<TokenGrant> Get(const std::string& hash) EXCLUDES(mu_);
  void Put(const std::string& hash, TokenGrant grant) EXCLUDES(mu_);
  //! Entries held, expired ones included until they are swept.
  size_t size() EXCLUDES(mu_);

 private:
  struct Entry {
    TokenGrant grant;
    std::chrono::steady_clock::time_point expires;
  };

  const std::chrono::milliseconds ttl_;
  const Clock clock_;
  Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);
  size_t sweep_at_ GUARDED_BY(mu_) = 64;  // size at which Put next drops expired entries
};

}  // namespace sightline
