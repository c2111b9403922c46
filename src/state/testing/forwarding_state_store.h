#pragma once

// Test support: a StateStore that forwards every call to another one, so a
// test overrides only the calls it wants to count, fail or hold up.

#include <optional>
#include <string>
#include <vector>

#include "state/state_store.h"

namespace sightline::testing {

//! Thread-safe as the store it forwards to. Does not own it.
class ForwardingStateStore : public StateStore {
 public:
  explicit ForwardingStateStore(StateStore* inner) : inner_(inner) {}

  Result<int64_t> EnsureProject(const std::string& n) override { return inner_->EnsureProject(n); }
  Result<std::optional<int64_t>> FindProject(const std::string& n) override { return inner_->FindProject(n); }
  Result<std::vector<ProjectRecord>> ListProjects() override { return inner_->ListProjects(); }
  Status AddToken(const std::string& p, const std::string& h, TokenScope s) override {
    return inner_->AddToken(p, h, s);
  }
  Result<std::optional<TokenRecord>> FindToken(const std::string& h) override { return inner_->FindToken(h); }
  Result<std::vector<TokenRecord>> ListTokens(const std::optional<std::string>& p) override {
    return inner_->ListTokens(p);
  }
  Result<int64_t> CountTokens(const std::string& p) override { return inner_->CountTokens(p); }
  Result<bool> DeleteToken(const std::string& h) override { return inner_->DeleteToken(h); }
  Status PutUser(const UserRecord& u) override { return inner_->PutUser(u); }
  Result<std::optional<UserRecord>> FindUser(const std::string& u) override { return inner_->FindUser(u); }
  Status AddSession(const SessionRecord& s) override { return inner_->AddSession(s); }
  Result<std::optional<std::string>> FindSession(const std::string& h, int64_t now) override {
    return inner_->FindSession(h, now);
  }
  Status DeleteSession(const std::string& h, int64_t now) override { return inner_->DeleteSession(h, now); }
  Result<int> SchemaVersion() override { return inner_->SchemaVersion(); }
  Status SetRetention(const std::string& p, const std::string& s, std::optional<int64_t> v) override {
    return inner_->SetRetention(p, s, v);
  }
  Result<std::vector<RetentionRecord>> ListRetention() override { return inner_->ListRetention(); }

 private:
  StateStore* const inner_;
};

}  // namespace sightline::testing
