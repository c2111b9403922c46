#pragma once

// Relational state: projects and ingest tokens, in SQLite in the data
// directory (state.sqlite). Tokens are stored as SHA-256 hashes only: they are
// 256-bit random strings, so a plain hash is enough (no KDF needed) and the
// plaintext exists only in the output of the command that minted it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  //! `bytes` random bytes as hex ("" if the system has no randomness).
  static std::string RandomHex(size_t bytes);

  // --- UI users and sessions ---
  //! Creates the user, or resets the password of an existing one. Passwords
  //! are stored as PBKDF2-HMAC-SHA256 (salted, 100k iterations).
  Status SetUserPassword(const std::string& username, const std::string& password) EXCLUDES(mu_);
  Result<bool> HasUser(const std::string& username) EXCLUDES(mu_);
  //! True when the password matches.
  Result<bool> CheckPassword(const std::string& username, const std::string& password) EXCLUDES(mu_);
  //! A new session id (random, returned in plaintext once; stored hashed).
  Result<std::string> CreateSession(const std::string& username, int64_t ttl_seconds) EXCLUDES(mu_);
  //! The user of a live session, or nullopt.
  Result<std::optional<std::string>> LookupSession(const std::string& session_id) EXCLUDES(mu_);
  Status DeleteSession(const std::string& session_id) EXCLUDES(mu_);

  struct Project {
    int64_t id;
    std::string name;
  };
  Result<std::vector<Project>> ListProjects() EXCLUDES(mu_);
  //! Id of an existing project, or nullopt.
  Result<std::optional<int64_t>> FindProject(const std::string& name) EXCLUDES(mu_);

 private:
  explicit StateStore(sqlite3* db) : db_(db) {}
  Result<int64_t> EnsureProjectLocked(const std::string& name) REQUIRES(mu_);
  Status Exec(const char* sql) REQUIRES(mu_);

  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace sightline
