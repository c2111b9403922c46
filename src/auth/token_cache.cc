#include "auth/token_cache.h"

#include <algorithm>

namespace sightline {

TokenCache::TokenCache(std::chrono::milliseconds ttl, Clock clock)
    : ttl_(std::max(ttl, std::chrono::milliseconds(0))),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {}

std::optional<TokenGrant> TokenCache::Get(const std::string& hash) {
  const auto now = clock_();
  MutexLock lock(&mu_);
  auto it = entries_.find(hash);
  if (it == entries_.end()) return std::nullopt;
  if (now >= it->second.expires) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.grant;
}

void TokenCache::Put(const std::string& hash, TokenGrant grant) {
  if (ttl_.count() == 0) return;
  const auto now = clock_();
  MutexLock lock(&mu_);
  // Revoked tokens are never looked up again, so their entries would stay;
  // sweeping when the map doubles keeps it near the number of live tokens.
  if (entries_.size() >= sweep_at_) {
    std::erase_if(entries_, [&](const auto& kv) { return now >= kv.second.expires; });
    sweep_at_ = std::max<size_t>(64, entries_.size() * 2);
  }
  entries_[hash] = Entry{grant, now + ttl_};
}

size_t TokenCache::size() {
  MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace sightline
