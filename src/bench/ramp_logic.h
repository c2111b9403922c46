#pragma once

// The decisions of `sightline bench ramp`, kept free of I/O so they can be
// tested exactly: the pass/fail rule of a step, the order of a phase's steps
// (an ascending ladder that stops at its first failure, then an optional
// bisection between the last passing and the first failing value), the
// winning step of a phase, and the phase's ETA. ramp.cc does the I/O.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace sightline::bench {

//! The published method: a step passes below 5% errors...
inline constexpr double kRampMaxErrorPct = 5.0;
//! ...and when at least 70% of the target request rate was achieved.
inline constexpr double kRampMinAchievedFraction = 0.70;

//! What one step measured, as far as the rule is concerned.
struct StepCounts {
  uint64_t requests = 0;     // sent, answered or not
  uint64_t ok_requests = 0;  // answered 2xx
  double target_rps = 0;
  double achieved_rps = 0;  // 2xx requests per second of the step
};

struct StepVerdict {
  double error_pct = 0;  // non-2xx or unanswered, percent of requests sent
  bool pass = false;
  std::string fail_reason;  // "" when passed
};

//! error_pct < 5 AND achieved_rps >= 0.7 * target_rps. A step that sent
//! nothing fails (100% errors): it says nothing about the server.
StepVerdict JudgeStep(const StepCounts& c);

//! 2xx requests per second of a step that was scheduled for duration_s:
//! divided by the longer of the two, so a step whose one request came back
//! in 5 ms does not claim 200 req/s, and one that ran late pays for it.
double AchievedRate(uint64_t ok_requests, double elapsed_s, double duration_s);

//! Sorted ascending, duplicates removed; an error for an empty list or a
//! value that is not > 0 (a ladder that stops at the first failure must rise).
Result<std::vector<double>> NormalizeLadder(std::vector<double> values, const std::string& what);

//! The order of a phase's steps. Ladder values run in ascending order until
//! the first failure; then, with bisect_steps > 0 and both a passing and a
//! failing value known, up to bisect_steps midpoints between them (rounded
//! to 0.5, so integer-or-half precision), each narrowing the bracket. Every
//! phase is bounded by ladder.size() + bisect_steps steps.
class RampSearch {
 public:
  RampSearch(std::vector<double> ladder, int bisect_steps);

  //! False once the phase is over.
  bool HasNext() const;
  //! The value of the next step. REQUIRES: HasNext().
  double Next() const;
  //! Records the outcome of the step Next() returned.
  void Record(bool passed);

  bool bisecting() const { return in_bisection_; }
  bool has_pass() const { return has_pass_; }
  bool has_fail() const { return has_fail_; }
  //! The highest passing value so far (0 when none passed).
  double last_pass() const { return last_pass_; }
  //! The lowest failing value so far (0 when none failed).
  double first_fail() const { return first_fail_; }
  //! The most steps still to run (the ladder may stop earlier), for ETAs.
  int MaxRemaining() const;

 private:
  double Midpoint() const;

  std::vector<double> ladder_;
  size_t ladder_index_ = 0;
  int bisect_left_;
  bool in_bisection_ = false;
  bool has_pass_ = false, has_fail_ = false;
  double last_pass_ = 0, first_fail_ = 0;
};

//! What ChooseBest() compares.
struct StepScore {
  bool pass = false;
  double accepted_items_per_s = 0;
};

//! Index of the passing step with the most accepted items/s; on a tie the
//! earlier step (the smaller batch or lower rate did as much with less).
//! -1 when no step passed.
int ChooseBest(const std::vector<StepScore>& steps);

//! Connections for a fleet step at rate req/s: one per 20 req/s, 4..64, so
//! each connection stays well below its own round-trip limit.
int FleetConnections(double rate);

//! Seconds left in a phase: the mean wall time of its finished steps times
//! the steps that may remain; per_step_guess_s before any step finished.
double EtaSeconds(int steps_done, double elapsed_s, int max_remaining, double per_step_guess_s);

}  // namespace sightline::bench
