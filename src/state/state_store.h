#pragma once

// Relational state behind one interface: projects, API/ingest tokens, UI users
// and their sessions. A store keeps plain records: every secret reaches it
// already hashed by auth/, so no store sees a plaintext token, password or
// session id, and none holds crypto policy.
//
// Implementations register by URL scheme in StateStoreRegistry: "sqlite" (a
// file in the data directory) and "postgres"/"postgresql" (a libpq URL, for
// several nodes sharing their state). Each one records its schema version in
// its own database and, at open, applies the shared forward migrations
// (state/state_migrations.h) up to kStateSchemaVersion in one transaction; a
// database written by a newer binary is refused, never downgraded.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sightline {

//! The schema version every implementation migrates to. Version N means the
//! same logical tables in every implementation, so a store can be copied
//! from one engine to another at equal versions.
inline constexpr int kStateSchemaVersion = 4;

struct ProjectRecord {
  int64_t id = 0;
  std::string name;
};

//! What a token may do: send telemetry of its project, or read it. Never
//! both, so the credential every exporter holds cannot read what it sent.
enum class TokenScope { kIngest, kRead };

//! "ingest" or "read": how a scope is stored, typed and printed.
const char* TokenScopeName(TokenScope scope);
//! The scope of that name, or nullopt.
std::optional<TokenScope> ParseTokenScope(std::string_view name);

struct TokenRecord {
  std::string hash;  // auth/tokens.h HashToken: the only form a token is stored in
  int64_t project_id = 0;
  std::string project;
  int64_t created_at = 0;  // unix seconds
  TokenScope scope = TokenScope::kIngest;
};

//! A salted PBKDF2-HMAC-SHA256 result, as auth/passwords.h writes and checks it.
struct PasswordRecord {
  std::string salt;
  std::string hash;
  int64_t iterations = 0;
};

struct UserRecord {
  std::string username;
  PasswordRecord password;
};

struct SessionRecord {
  std::string hash;  // of the session id the browser holds
  std::string username;
  int64_t expires_at = 0;  // unix seconds
};

//! A project's own retention of one signal, which overrides the server's
//! `--retention-<signal>` for that project.
struct RetentionRecord {
  int64_t project_id = 0;
  std::string project;
  std::string signal;   // "spans", "logs" or "metrics"
  int64_t seconds = 0;  // how long rows are kept; 0: forever
};

//! Every method is thread-safe. Errors are IoError (the database failed)
//! unless stated otherwise.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // --- projects ---
  //! Id of the project, created when missing.
  virtual Result<int64_t> EnsureProject(const std::string& name) = 0;
  //! Id of an existing project, or nullopt.
  virtual Result<std::optional<int64_t>> FindProject(const std::string& name) = 0;
  //! Every project, by name.
  virtual Result<std::vector<ProjectRecord>> ListProjects() = 0;

  // --- tokens, by hash ---
  //! Adds a token hash with its scope to the project (created when missing).
  //! A hash already stored is left as it is, whichever project and scope it has.
  virtual Status AddToken(const std::string& project, const std::string& hash, TokenScope scope) = 0;
  //! The token with that hash, or nullopt.
  virtual Result<std::optional<TokenRecord>> FindToken(const std::string& hash) = 0;
  //! Tokens of one project, or of every project when `project` is nullopt;
  //! oldest first.
  virtual Result<std::vector<TokenRecord>> ListTokens(const std::optional<std::string>& project) = 0;
  virtual Result<int64_t> CountTokens(const std::string& project) = 0;
  //! Deletes the token; false when no such hash was stored.
  virtual Result<bool> DeleteToken(const std::string& hash) = 0;

  // --- users ---
  //! Creates the user, or replaces the password record of an existing one
  //! and, in the same transaction, ends every session of that user: whoever
  //! logged in with the old password is logged out by the change.
  virtual Status PutUser(const UserRecord& user) = 0;
  virtual Result<std::optional<UserRecord>> FindUser(const std::string& username) = 0;

  // --- sessions, by hash ---
  //! REQUIRES: the user exists.
  virtual Status AddSession(const SessionRecord& session) = 0;
  //! The user of the session when it is still live at `now` (unix seconds), or nullopt.
  virtual Result<std::optional<std::string>> FindSession(const std::string& hash, int64_t now) = 0;
  //! Deletes the session, and with it every session already expired at `now`.
  virtual Status DeleteSession(const std::string& hash, int64_t now) = 0;

  // --- retention overrides ---
  //! Sets the project's own retention of `signal` ("spans", "logs" or
  //! "metrics"; InvalidArgument otherwise) to `seconds` (0: forever), or
  //! with nullopt removes it so the server's flag applies again. NotFound for
  //! an unknown project.
  virtual Status SetRetention(const std::string& project, const std::string& signal,
                              std::optional<int64_t> seconds) = 0;
  //! Every override of every project, by project name, then signal.
  virtual Result<std::vector<RetentionRecord>> ListRetention() = 0;

  //! The version recorded in the database: kStateSchemaVersion once opened.
  virtual Result<int> SchemaVersion() = 0;
};

//! Opens (creating and migrating as needed) a state store at `location`.
using StateStoreFactory = std::function<Result<std::unique_ptr<StateStore>>(const std::string& location)>;

//! Factories by URL scheme. Register at start (RegisterBuiltinStateStores);
//! Open may then be called from any thread.
class StateStoreRegistry {
 public:
  static StateStoreRegistry& Instance();
  void Register(const std::string& scheme, StateStoreFactory factory);
  //! `scheme://rest` opens the store registered for `scheme` with `rest`; a
  //! location without a scheme is a data directory and opens "sqlite" there.
  //! InvalidArgument for an unknown scheme.
  Result<std::unique_ptr<StateStore>> Open(const std::string& location) const;

 private:
  std::map<std::string, StateStoreFactory> factories_;
};

//! Registers sqlite, postgres and postgresql. Idempotent.
void RegisterBuiltinStateStores();

//! RegisterBuiltinStateStores, then StateStoreRegistry::Instance().Open(location).
Result<std::unique_ptr<StateStore>> OpenStateStore(const std::string& location);

}  // namespace sightline
