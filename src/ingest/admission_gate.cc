#include "ingest/admission_gate.h"

#include <chrono>

namespace sightline {

AdmissionGate::Ticket& AdmissionGate::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    gate_ = other.gate_;
    bytes_ = other.bytes_;
    other.gate_ = nullptr;
  }
  return *this;
}

Status AdmissionGate::Ticket::Grow(size_t bytes) {
  if (gate_ == nullptr) return Status::Internal("ticket not admitted");
  if (!gate_->TryGrow(bytes)) {
    return Status::Unavailable("ingest memory budget exhausted (" + std::to_string(gate_->limits_.max_inflight_bytes) +
                               " bytes in flight); retry later");
  }
  bytes_ += bytes;
  return Status::Ok();
}

void AdmissionGate::Ticket::Release() {
  if (gate_ != nullptr) gate_->Release(bytes_);
  gate_ = nullptr;
  bytes_ = 0;
}

Result<AdmissionGate::Ticket> AdmissionGate::Admit(size_t bytes) {
  MutexLock lock(&mu_);
  if (closed_) return Status::Unavailable("server is shutting down");
  if (inflight_requests_ >= limits_.max_inflight_requests) {
    rejected_requests_++;
    return Status::Unavailable("too many concurrent ingest requests (limit " +
                               std::to_string(limits_.max_inflight_requests) + "); retry later");
  }
  // A request larger than the whole budget could never be admitted; let it in
  // alone rather than starve it (the body limit still bounds it).
  if (inflight_bytes_ + bytes > limits_.max_inflight_bytes && inflight_requests_ > 0) {
    rejected_bytes_++;
    return Status::Unavailable("ingest memory budget exhausted (" + std::to_string(limits_.max_inflight_bytes) +
                               " bytes in flight); retry later");
  }
  inflight_requests_++;
  inflight_bytes_ += bytes;
  if (inflight_bytes_ > peak_inflight_bytes_) peak_inflight_bytes_ = inflight_bytes_;
  admitted_++;
  return Ticket(this, bytes);
}

bool AdmissionGate::TryGrow(size_t bytes) {
  MutexLock lock(&mu_);
  if (inflight_bytes_ + bytes > limits_.max_inflight_bytes && inflight_requests_ > 1) {
    rejected_bytes_++;
    return false;
  }
  inflight_bytes_ += bytes;
  if (inflight_bytes_ > peak_inflight_bytes_) peak_inflight_bytes_ = inflight_bytes_;
  return true;
}

void AdmissionGate::Release(size_t bytes) {
  MutexLock lock(&mu_);
  inflight_bytes_ -= bytes;
  inflight_requests_--;
  if (inflight_requests_ == 0) idle_cv_.SignalAll();
}

void AdmissionGate::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
}

bool AdmissionGate::WaitIdle(int64_t timeout_ms) {
  const CondVar::Clock::time_point deadline = CondVar::Clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(&mu_);
  while (inflight_requests_ > 0) {
    if (!idle_cv_.WaitUntil(&mu_, deadline)) break;
  }
  return inflight_requests_ == 0;
}

AdmissionGate::Stats AdmissionGate::GetStats() {
  MutexLock lock(&mu_);
  Stats s;
  s.inflight_bytes = inflight_bytes_;
  s.inflight_requests = inflight_requests_;
  s.peak_inflight_bytes = peak_inflight_bytes_;
  s.admitted = admitted_;
  s.rejected_bytes = rejected_bytes_;
  s.rejected_requests = rejected_requests_;
  return s;
}

}  // namespace sightline
