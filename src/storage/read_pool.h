#pragma once

#include <memory>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "storage/sql/sql_connection.h"

namespace sightline {

//! A fixed set of engine read connections shared by dashboard queries.
//! Acquire() hands out a lease (a ReadConnection that forwards to a pooled
//! one); destroying the lease puts the connection back. Thread-safe. The pool
//! must outlive its leases.
class ReadPool {
 public:
  explicit ReadPool(std::vector<std::unique_ptr<ReadConnection>> connections);
  ~ReadPool();

  //! Waits up to wait_ms for a free connection; Unavailable after that.
  Result<std::unique_ptr<ReadConnection>> Acquire(int64_t wait_ms) EXCLUDES(mu_);
  int size() const { return size_; }
  int in_use() EXCLUDES(mu_);

 private:
  class Lease;
  void Release(std::unique_ptr<ReadConnection> conn) EXCLUDES(mu_);

  const int size_;
  Mutex mu_;
  CondVar cv_{&mu_};  // signalled when a connection is released
  std::vector<std::unique_ptr<ReadConnection>> free_ GUARDED_BY(mu_);
};

}  // namespace sightline
