#pragma once

// How the engine reaches ClickHouse: one statement at a time on a connection
// of its own. Two implementations run the same SQL: the HTTP interface
// (http_client.h, `http://host:port`: a server, a cluster, ClickHouse Cloud)
// and an in-process ClickHouse (chdb_transport.h, `chdb:///abs/dir`: the
// library libchdb.so, so the tests run the current-release DDL and reads).

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sightline::clickhouse {

struct Endpoint;
struct Request;

//! One connection. Not thread-safe, except Abort().
class Transport {
 public:
  virtual ~Transport() = default;

  //! Runs the request and returns the answer's body; a ClickHouse error as
  //! ErrorStatus maps it, Unavailable when ClickHouse cannot be reached.
  virtual Result<std::string> Execute(const Request& request) = 0;
  //! Any thread: makes a running Execute(), and every later one until
  //! ClearAbort(), return Cancelled promptly.
  virtual void Abort() = 0;
  virtual void ClearAbort() = 0;
  virtual const Endpoint& endpoint() const = 0;
};

//! "http://host[:port]" (ParseUrl) or "chdb:///absolute/data/dir" (the
//! in-process engine keeping its data there); InvalidArgument otherwise.
Result<Endpoint> ParseTarget(std::string_view url);

//! A new connection to the endpoint: HTTP, or in-process when
//! `endpoint.chdb_path` is set (a library that cannot load makes every
//! Execute() fail, with the reason).
std::unique_ptr<Transport> Connect(const Endpoint& endpoint);

}  // namespace sightline::clickhouse
