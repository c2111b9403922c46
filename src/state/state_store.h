#pragma once

// Relational state: projects and ingest tokens, in SQLite in the data
// directory (state.sqlite). Tokens are stored as SHA-256 hashes only: they are
// 256-bit random strings, so a plain hash is enough (no KDF needed) and the
// plaintext exists only in the output of the command that minted it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"

struct sqlite3;

namespace sightline {

//! Thread-safe (one connection behind a mutex; lookups are cached by the caller).
class StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> Open(const std::string& data_dir);
  ~StateStore();

  //! Id of the project, created when missing.
  Result<int64_t> EnsureProject(const std::string& name) EXCLUDES(mu_);
  //! Mints a new random token for the project (created when missing) and returns its plaintext.
  Result<std::string> CreateToken(const std::string& project) EXCLUDES(mu_);
  //! Stores the hash of a caller-chosen token (SIGHTLINE_INGEST_TOKEN).
  Status AddToken(const std::string& project, const std::string& token) EXCLUDES(mu_);
  //! Project id the token belongs to, or nullopt.
  Result<std::optional<int64_t>> LookupToken(const std::string& token) EXCLUDES(mu_);
  Result<int64_t> CountTokens(const std::string& project) EXCLUDES(mu_);

  static std::string HashToken(const std::string& token);

 private:
  explicit StateStore(sqlite3* db) : db_(db) {}
  Result<int64_t> EnsureProjectLocked(const std::string& name) REQUIRES(mu_);
  Status Exec(const char* sql) REQUIRES(mu_);

  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace sightline
