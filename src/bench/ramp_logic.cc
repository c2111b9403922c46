#include "bench/ramp_logic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sightline::bench {

namespace {

// Achieved rates come from divisions, so "exactly 70%" may land a hair
// below the product 0.7 * target; the rule means the exact ratio.
constexpr double kRelativeSlack = 1e-9;

std::string Format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}

}  // namespace

StepVerdict JudgeStep(const StepCounts& c) {
  StepVerdict v;
  if (c.requests == 0) {
    v.error_pct = 100;
    v.fail_reason = "no request was sent";
    return v;
  }
  const uint64_t bad = c.requests - std::min(c.ok_requests, c.requests);
  v.error_pct = 100.0 * static_cast<double>(bad) / static_cast<double>(c.requests);
  // In integers, so exactly 5% (1 in 20) fails however the division rounds.
  const bool errors_ok = bad * 100 < static_cast<uint64_t>(kRampMaxErrorPct) * c.requests;
  const double needed = kRampMinAchievedFraction * c.target_rps;
  const bool rate_ok = c.achieved_rps >= needed * (1 - kRelativeSlack);
  if (!errors_ok) v.fail_reason = Format("errors %.2f%% (must stay below %.0f%%)", v.error_pct, kRampMaxErrorPct);
  if (!rate_ok) {
    if (!v.fail_reason.empty()) v.fail_reason += "; ";
    v.fail_reason += Format("achieved %.2f req/s, below %.0f%% of the target %.2f req/s", c.achieved_rps,
                            kRampMinAchievedFraction * 100, c.target_rps);
  }
  v.pass = errors_ok && rate_ok;
  return v;
}

double AchievedRate(uint64_t ok_requests, double elapsed_s, double duration_s) {
  double seconds = std::max(elapsed_s, duration_s);
  return seconds > 0 ? static_cast<double>(ok_requests) / seconds : 0;
}

Result<std::vector<double>> NormalizeLadder(std::vector<double> values, const std::string& what) {
  if (values.empty()) return Status::InvalidArgument(what + ": give at least one value");
  for (double v : values) {
    if (!std::isfinite(v) || !(v > 0)) {
      return Status::InvalidArgument(what + ": every value must be a number above 0");
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

RampSearch::RampSearch(std::vector<double> ladder, int bisect_steps)
    : ladder_(std::move(ladder)), bisect_left_(std::max(0, bisect_steps)) {}

bool RampSearch::HasNext() const {
  if (!in_bisection_) return !has_fail_ && ladder_index_ < ladder_.size();
  if (bisect_left_ <= 0) return false;
  // Once the bracket is too narrow for a new half-step midpoint, stop.
  double m = Midpoint();
  return m > last_pass_ && m < first_fail_;
}

double RampSearch::Next() const { return in_bisection_ ? Midpoint() : ladder_[ladder_index_]; }

void RampSearch::Record(bool passed) {
  const double v = Next();
  if (passed) {
    last_pass_ = has_pass_ ? std::max(last_pass_, v) : v;
    has_pass_ = true;
  } else {
    first_fail_ = has_fail_ ? std::min(first_fail_, v) : v;
    has_fail_ = true;
  }
  if (in_bisection_) {
    --bisect_left_;
    return;
  }
  ++ladder_index_;
  // The ladder's first failure ends it; bisect only with a passing value
  // below it (a phase whose first step failed has nothing to bisect from).
  if (!passed && has_pass_ && bisect_left_ > 0) in_bisection_ = true;
}

int RampSearch::MaxRemaining() const {
  if (in_bisection_) return HasNext() ? bisect_left_ : 0;
  if (has_fail_ || ladder_index_ >= ladder_.size()) return 0;
  // A later ladder failure would still open the bisection.
  return static_cast<int>(ladder_.size() - ladder_index_) + bisect_left_;
}

double RampSearch::Midpoint() const { return std::round(last_pass_ + first_fail_) / 2; }

int ChooseBest(const std::vector<StepScore>& steps) {
  int best = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].pass) continue;
    if (best < 0 || steps[i].accepted_items_per_s > steps[static_cast<size_t>(best)].accepted_items_per_s) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

int FleetConnections(double rate) {
  double n = std::ceil(rate / 20);
  return static_cast<int>(std::clamp(n, 4.0, 64.0));
}

double EtaSeconds(int steps_done, double elapsed_s, int max_remaining, double per_step_guess_s) {
  if (max_remaining <= 0) return 0;
  double per_step = steps_done > 0 ? elapsed_s / steps_done : per_step_guess_s;
  return per_step * max_remaining;
}

}  // namespace sightline::bench
