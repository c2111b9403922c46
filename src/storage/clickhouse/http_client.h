#pragma once

// A small synchronous client for ClickHouse's HTTP interface (the way to
// reach a server, a cluster or ClickHouse Cloud): one keep-alive connection
// per object, requests as POST with the statement in the URL or the body.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "storage/clickhouse/transport.h"

namespace sightline::clickhouse {

//! Where the server is and who we are (StoreOptions::clickhouse_*).
struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8123";
  std::string database = "sightline";
  std::string user;       // X-ClickHouse-User when set
  std::string password;   // X-ClickHouse-Key when set
  std::string chdb_path;  // in-process ClickHouse keeping its data here (chdb:// URLs; transport.h)
  //! How long one request may go without being sent or answered (connect,
  //! write, then the whole answer); 0 = no limit (the read connections,
  //! which the query deadline interrupts instead). Past it: Unavailable.
  std::chrono::milliseconds timeout{0};
};

//! Parses "http://host[:port][/]"; InvalidArgument for anything else (https
//! is not supported yet).
Result<Endpoint> ParseUrl(std::string_view url);

//! One HTTP request to ClickHouse.
struct Request {
  std::string query;  // sent as ?query= when `body` holds data, else as the body
  std::string body;   // INSERT data; empty for a statement
  bool gzip = false;  // compress `body` (Content-Encoding: gzip)
  std::string query_id;
  bool use_database = true;                                   // ?database= (off while the database is created)
  std::vector<std::pair<std::string, std::string>> settings;  // ?name=value
};

//! Maps a ClickHouse error (its "Code: N" and HTTP status) to a Status:
//! syntax and semantic errors InvalidArgument, a killed query Cancelled, an
//! unreachable or overloaded server Unavailable (retryable), others IoError.
Status ErrorStatus(int http_status, std::string_view body);

//! A keep-alive HTTP/1.1 connection. Not thread-safe, except Abort().
class Connection final : public Transport {
 public:
  explicit Connection(Endpoint endpoint);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  //! Sends the request and returns the body of a 200 answer; any other answer
  //! or a transport failure is an error (ErrorStatus; Unavailable when the
  //! server cannot be reached). A connection idle long enough for the server
  //! to close it (2 s; its keep_alive_timeout is 3 s by default), or one it
  //! did close, is replaced before the request is sent; a statement without
  //! data that still meets a closed socket (the server closed it while the
  //! request went out) is sent once more on a fresh one, never an insert.
  Result<std::string> Execute(const Request& request) override EXCLUDES(mu_);
  //! Any thread: makes a running Execute(), and every later one until
  //! ClearAbort(), return Cancelled promptly (the socket is shut down; the
  //! first Execute() after ClearAbort() reconnects).
  void Abort() override EXCLUDES(mu_);
  void ClearAbort() override EXCLUDES(mu_);
  const Endpoint& endpoint() const override { return endpoint_; }

 private:
  struct Socket;
  Result<std::string> ExecuteOnce(const Request& request);
  //! True when the idle socket is readable: the server closed it.
  bool ClosedByPeer();
  //! Closes the socket; Abort() no longer reaches it.
  void DropSocket() EXCLUDES(mu_);

  const Endpoint endpoint_;
  std::unique_ptr<Socket> socket_;
  std::chrono::steady_clock::time_point last_used_;
  bool transport_failed_ = false;  // the last ExecuteOnce failed on the socket, not with an answer
  Mutex mu_;                       // the socket's descriptor, for Abort()
  int fd_ GUARDED_BY(mu_) = -1;
  bool aborted_ GUARDED_BY(mu_) = false;
};

//! Percent-encodes a URL query component.
std::string UrlEncode(std::string_view s);

//! gzip of `in` (libdeflate, level 1: the server decompresses it for free
//! compared with the network it saves).
std::string Gzip(std::string_view in);

}  // namespace sightline::clickhouse
