#pragma once

// Test support: one real PostgreSQL server per test binary, started at the
// first Shared() call in a temporary directory on a free loopback port, and
// stopped (its directory removed) when the binary exits. Each test takes a
// database of its own (NewDatabase), so tests never see each other's rows.
//
// Recipe: initdb -A trust, then postgres -p PORT -k DIR -c
// listen_addresses=127.0.0.1 (durability off: the data dies with the test).
// As root, both run as the `postgres` OS user (initdb refuses root), in a
// directory that user owns. The server dies with the test binary
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind. Binaries are
// looked up in $SIGHTLINE_PG_BINDIR, then /usr/lib/postgresql/<version>/bin
// (Debian postgresql-15); when missing, Shared() fails: tests that need
// PostgreSQL fail, they never skip.

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace sightline::testing {

class PostgresServer {
 public:
  //! The binary's server, started at the first call (the same error on
  //! every call when it could not be). Call from the main thread.
  static Result<PostgresServer*> Shared();

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  //! The connection URL of a database on this server.
  std::string Url(const std::string& database) const;
  //! Creates a new empty database; its connection URL.
  Result<std::string> NewDatabase();
  //! The name of the database in a URL from Url/NewDatabase.
  static std::string DatabaseOf(const std::string& url);

 private:
  PostgresServer() = default;
  Status Start();

  std::string root_;  // temp dir: data/, the socket, server.log
  int port_ = 0;
  pid_t pid_ = -1;
  int databases_ = 0;
};

//! Runs SQL (one statement or several) on its own connection to `url`.
Status PgExec(const std::string& url, const std::string& sql);
//! The rows of a query on its own connection to `url`, every cell as text
//! (NULL as ""); an error when it fails.
Result<std::vector<std::vector<std::string>>> PgQuery(const std::string& url, const std::string& sql);

}  // namespace sightline::testing
