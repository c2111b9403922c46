#include "storage/read_pool.h"

#include <chrono>

namespace sightline {

class ReadPool::Lease final : public ReadConnection {
 public:
  Lease(ReadPool* pool, std::unique_ptr<ReadConnection> conn) : pool_(pool), conn_(std::move(conn)) {}
  ~Lease() override { pool_->Release(std::move(conn_)); }
  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    return conn_->Query(sql, params, on_row);
  }
  void Interrupt() override { conn_->Interrupt(); }

 private:
  ReadPool* pool_;
  std::unique_ptr<ReadConnection> conn_;
};

ReadPool::ReadPool(std::vector<std::unique_ptr<ReadConnection>> connections)
    : size_(static_cast<int>(connections.size())), free_(std::move(connections)) {}

ReadPool::~ReadPool() = default;

Result<std::unique_ptr<ReadConnection>> ReadPool::Acquire(int64_t wait_ms) {
  const CondVar::Clock::time_point deadline = CondVar::Clock::now() + std::chrono::milliseconds(wait_ms);
  MutexLock lock(&mu_);
  while (free_.empty()) {
    if (!cv_.WaitUntil(&mu_, deadline)) break;
  }
  if (free_.empty()) {
    return Status::Unavailable("all " + std::to_string(size_) + " read connections are busy; retry later");
  }
  std::unique_ptr<ReadConnection> conn = std::move(free_.back());
  free_.pop_back();
  return std::unique_ptr<ReadConnection>(new Lease(this, std::move(conn)));
}

void ReadPool::Release(std::unique_ptr<ReadConnection> conn) {
  MutexLock lock(&mu_);
  free_.push_back(std::move(conn));
  cv_.Signal();
}

int ReadPool::in_use() {
  MutexLock lock(&mu_);
  return size_ - static_cast<int>(free_.size());
}

}  // namespace sightline
