#include "ingest/admission_gate.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sightline {

AdmissionGate::Ticket& AdmissionGate::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    gate_ = other.gate_;
    project_ = other.project_;
    bytes_ = other.bytes_;
    other.gate_ = nullptr;
  }
  return *this;
}

Status AdmissionGate::Ticket::Grow(size_t bytes) {
  if (gate_ == nullptr) return Status::Internal("ticket not admitted");
  SL_RETURN_IF_ERROR(gate_->TryGrow(project_, bytes));
  bytes_ += bytes;
  return Status::Ok();
}

void AdmissionGate::Ticket::Release() {
  if (gate_ != nullptr) gate_->Release(project_, bytes_);
  gate_ = nullptr;
  bytes_ = 0;
}

AdmissionGate::AdmissionGate(Limits limits, Clock clock)
    : limits_(limits), clock_(clock ? std::move(clock) : Clock(std::chrono::steady_clock::now)) {}

Status AdmissionGate::BudgetExhausted() const {
  return Status::Unavailable("ingest memory budget exhausted (" + std::to_string(limits_.max_inflight_bytes) +
                             " bytes in flight); retry later");
}

int AdmissionGate::ActiveProjectsLocked(std::chrono::steady_clock::time_point now) {
  const auto window = std::chrono::milliseconds(limits_.active_window_ms);
  int active = 0;
  // One pass over the projects seen within the window: as many as send at
  // once, so a handful to a few hundred entries.
  for (auto it = projects_.begin(); it != projects_.end();) {
    if (it->second.requests == 0 && now - it->second.last_seen > window) {
      it = projects_.erase(it);
    } else {
      ++active;
      ++it;
    }
  }
  return active;
}

AdmissionGate::Share AdmissionGate::ShareLocked(int active) const {
  active = std::max(1, active);
  return Share{limits_.max_inflight_bytes / static_cast<size_t>(active),
               std::max(1, limits_.max_inflight_requests / active)};
}

void AdmissionGate::NoteLocked(std::chrono::steady_clock::time_point now, bool attempt, bool refused) {
  const double age = std::chrono::duration<double>(now - noted_at_).count();
  if (age > 0) {
    const double keep = std::exp(-age / std::chrono::duration<double>(kPressureDecay).count());
    recent_attempts_ *= keep;
    recent_refusals_ *= keep;
    noted_at_ = now;
  }
  if (attempt) recent_attempts_ += 1;
  if (refused) recent_refusals_ += 1;
}

double AdmissionGate::PressureLocked() const {
  // Decay does not change the ratio; the +1 is one admitted request's worth
  // of doubt, so one refusal alone is not read as saturation.
  return std::clamp(recent_refusals_ / (recent_attempts_ + 1), 0.0, 1.0);
}

double AdmissionGate::Pressure() {
  MutexLock lock(&mu_);
  return PressureLocked();
}

Result<AdmissionGate::Ticket> AdmissionGate::Admit(size_t bytes, int64_t project_id) {
  MutexLock lock(&mu_);
  const auto now = clock_();
  NoteLocked(now, /*attempt=*/true, /*refused=*/false);
  if (closed_) {
    NoteLocked(now, /*attempt=*/false, /*refused=*/true);
    return Status::Unavailable("server is shutting down");
  }
  ProjectUse& project = projects_[project_id];
  project.last_seen = now;
  const int active = ActiveProjectsLocked(now);  // never forgets `project`: it was just seen
  // The floor: a project with nothing in flight is only held to the global
  // budget, so every project gets at least one request in. Alone, a project's
  // share is the global budget, refused below with its own message.
  if (active > 1 && project.requests > 0) {
    const Share share = ShareLocked(active);
    if (project.requests >= share.requests || project.bytes + bytes > share.bytes) {
      rejected_project_share_++;
      NoteLocked(now, /*attempt=*/false, /*refused=*/true);
      return Status::Unavailable("this project holds its fair share of the ingest budget (" + std::to_string(active) +
                                 " projects active: " + std::to_string(share.bytes) + " bytes and " +
                                 std::to_string(share.requests) + " requests each); retry later");
    }
  }
  if (inflight_requests_ >= limits_.max_inflight_requests) {
    rejected_requests_++;
    NoteLocked(now, /*attempt=*/false, /*refused=*/true);
    return Status::Unavailable("too many concurrent ingest requests (limit " +
                               std::to_string(limits_.max_inflight_requests) + "); retry later");
  }
  // A request larger than the whole budget could never be admitted; let it in
  // alone rather than starve it (the body limit still bounds it).
  if (inflight_bytes_ + bytes > limits_.max_inflight_bytes && inflight_requests_ > 0) {
    rejected_bytes_++;
    NoteLocked(now, /*attempt=*/false, /*refused=*/true);
    return BudgetExhausted();
  }
  project.requests++;
  project.bytes += bytes;
  inflight_requests_++;
  inflight_bytes_ += bytes;
  if (inflight_bytes_ > peak_inflight_bytes_) peak_inflight_bytes_ = inflight_bytes_;
  admitted_++;
  return Ticket(this, project_id, bytes);
}

Status AdmissionGate::TryGrow(int64_t project_id, size_t bytes) {
  MutexLock lock(&mu_);
  const auto now = clock_();
  if (inflight_bytes_ + bytes > limits_.max_inflight_bytes && inflight_requests_ > 1) {
    rejected_bytes_++;
    NoteLocked(now, /*attempt=*/false, /*refused=*/true);
    return BudgetExhausted();
  }
  const int active = ActiveProjectsLocked(now);
  ProjectUse& project = projects_[project_id];  // present: this ticket is one of its requests
  project.last_seen = now;
  // As on admission, a project's only request is held to the global budget alone.
  if (active > 1 && project.requests > 1) {
    const Share share = ShareLocked(active);
    if (project.bytes + bytes > share.bytes) {
      rejected_project_share_++;
      NoteLocked(now, /*attempt=*/false, /*refused=*/true);
      return Status::Unavailable("this project holds its fair share of the ingest memory budget (" +
                                 std::to_string(share.bytes) + " bytes with " + std::to_string(active) +
                                 " projects active); retry later");
    }
  }
  project.bytes += bytes;
  inflight_bytes_ += bytes;
  if (inflight_bytes_ > peak_inflight_bytes_) peak_inflight_bytes_ = inflight_bytes_;
  return Status::Ok();
}

void AdmissionGate::Release(int64_t project_id, size_t bytes) {
  MutexLock lock(&mu_);
  ProjectUse& project = projects_[project_id];
  project.bytes -= bytes;
  project.requests--;
  project.last_seen = clock_();
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
  s.rejected_project_share = rejected_project_share_;
  s.active_projects = ActiveProjectsLocked(clock_());
  s.pressure = PressureLocked();
  return s;
}

}  // namespace sightline
