#include "bench/ramp_logic.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace sightline::bench {
namespace {

StepCounts Counts(uint64_t requests, uint64_t ok, double target, double achieved) {
  StepCounts c;
  c.requests = requests;
  c.ok_requests = ok;
  c.target_rps = target;
  c.achieved_rps = achieved;
  return c;
}

//! Runs a search against a server that passes every value <= capacity;
//! returns the values tried, in order.
std::vector<double> Drive(RampSearch* s, const std::function<bool(double)>& passes) {
  std::vector<double> tried;
  for (int guard = 0; s->HasNext() && guard < 100; ++guard) {
    double v = s->Next();
    tried.push_back(v);
    s->Record(passes(v));
  }
  EXPECT_FALSE(s->HasNext()) << "the search must end by itself";
  return tried;
}

TEST(RampJudge, ErrorsPassJustBelowFivePercentAndFailAtExactlyFive) {
  // 1 bad of 21 = 4.76%: passes. 1 of 20 = 5.00%: fails. 2 of 40 = 5%: fails.
  EXPECT_TRUE(JudgeStep(Counts(21, 20, 10, 10)).pass);
  StepVerdict at = JudgeStep(Counts(20, 19, 10, 10));
  EXPECT_FALSE(at.pass);
  EXPECT_DOUBLE_EQ(at.error_pct, 5.0);
  EXPECT_NE(at.fail_reason.find("errors"), std::string::npos) << at.fail_reason;
  EXPECT_FALSE(JudgeStep(Counts(40, 38, 10, 10)).pass);
  EXPECT_TRUE(JudgeStep(Counts(1000, 951, 10, 10)).pass);
  EXPECT_FALSE(JudgeStep(Counts(1000, 950, 10, 10)).pass);
}

TEST(RampJudge, AchievedPassesAtExactlySeventyPercentAndFailsJustBelow) {
  EXPECT_TRUE(JudgeStep(Counts(10, 10, 10, 7.0)).pass);
  EXPECT_TRUE(JudgeStep(Counts(10, 10, 3, 2.1)).pass);  // 0.7 * 3 is 2.0999... in binary
  // The rate as ramp.cc computes it: 14 ok over a 2 s step at 10 req/s target.
  EXPECT_FALSE(JudgeStep(Counts(20, 14, 10, AchievedRate(14, 1.5, 2.0))).pass);  // 30% errors
  EXPECT_TRUE(JudgeStep(Counts(14, 14, 10, AchievedRate(14, 1.5, 2.0))).pass);
  StepVerdict below = JudgeStep(Counts(10, 10, 10, 6.99));
  EXPECT_FALSE(below.pass);
  EXPECT_NE(below.fail_reason.find("achieved"), std::string::npos) << below.fail_reason;
  EXPECT_EQ(below.fail_reason.find("errors"), std::string::npos) << below.fail_reason;
}

TEST(RampJudge, BothReasonsAreGivenAndAPassHasNone) {
  StepVerdict v = JudgeStep(Counts(10, 5, 10, 2.5));
  EXPECT_FALSE(v.pass);
  EXPECT_DOUBLE_EQ(v.error_pct, 50);
  EXPECT_NE(v.fail_reason.find("errors"), std::string::npos);
  EXPECT_NE(v.fail_reason.find("achieved"), std::string::npos);
  EXPECT_EQ(JudgeStep(Counts(10, 10, 10, 10)).fail_reason, "");
}

TEST(RampJudge, AStepThatSentNothingFails) {
  StepVerdict v = JudgeStep(Counts(0, 0, 5, 0));
  EXPECT_FALSE(v.pass);
  EXPECT_DOUBLE_EQ(v.error_pct, 100);
  EXPECT_FALSE(v.fail_reason.empty());
}

TEST(RampAchievedRate, DividesByTheLongerOfElapsedAndScheduled) {
  // One request answered in 5 ms of a 1 s step at 1 req/s is 1 req/s, not 200.
  EXPECT_DOUBLE_EQ(AchievedRate(1, 0.005, 1.0), 1.0);
  // A step that ran 4 s over its 2 s schedule pays for the lateness.
  EXPECT_DOUBLE_EQ(AchievedRate(20, 4.0, 2.0), 5.0);
  EXPECT_DOUBLE_EQ(AchievedRate(0, 0, 0), 0);
}

TEST(RampLadder, NormalizeSortsDedupesAndRejectsNonPositive) {
  auto ok = NormalizeLadder({5, 1, 3, 3, 2}, "--rates");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), (std::vector<double>{1, 2, 3, 5}));
  EXPECT_FALSE(NormalizeLadder({}, "--rates").ok());
  EXPECT_FALSE(NormalizeLadder({1, 0}, "--rates").ok());
  auto bad = NormalizeLadder({-2}, "--fleet-rates");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--fleet-rates"), std::string::npos);
}

TEST(RampSearch, LadderRunsAllStepsWhenEverythingPasses) {
  RampSearch s({1, 2, 3, 5}, 3);
  EXPECT_EQ(s.MaxRemaining(), 7);
  auto tried = Drive(&s, [](double) { return true; });
  EXPECT_EQ(tried, (std::vector<double>{1, 2, 3, 5}));
  EXPECT_FALSE(s.has_fail());
  EXPECT_EQ(s.last_pass(), 5);
  EXPECT_EQ(s.MaxRemaining(), 0);
}

TEST(RampSearch, LadderStopsAtTheFirstFailureWithoutBisection) {
  RampSearch s({50, 100, 200, 400, 800}, 0);
  auto tried = Drive(&s, [](double v) { return v <= 100; });
  EXPECT_EQ(tried, (std::vector<double>{50, 100, 200}));
  EXPECT_EQ(s.last_pass(), 100);
  EXPECT_EQ(s.first_fail(), 200);
  EXPECT_FALSE(s.bisecting());
}

TEST(RampSearch, LadderStopsAtTheFirstFailureEvenIfALaterValueWouldPass) {
  // A flaky server: 3 fails, 5 would pass. The ladder must not go on.
  RampSearch s({1, 2, 3, 5, 8}, 0);
  auto tried = Drive(&s, [](double v) { return v != 3; });
  EXPECT_EQ(tried, (std::vector<double>{1, 2, 3}));
}

TEST(RampSearch, BisectionConvergesBetweenLastPassAndFirstFail) {
  // Capacity 10.3 req/s: the ladder passes 8, fails 12; bisection tries
  // 10 (pass), 11 (fail), 10.5 (fail) and leaves the bracket [10, 10.5].
  RampSearch s({1, 2, 3, 5, 8, 12, 17, 25}, 3);
  auto tried = Drive(&s, [](double v) { return v <= 10.3; });
  EXPECT_EQ(tried, (std::vector<double>{1, 2, 3, 5, 8, 12, 10, 11, 10.5}));
  EXPECT_EQ(s.last_pass(), 10);
  EXPECT_EQ(s.first_fail(), 10.5);
  EXPECT_TRUE(s.bisecting());
}

TEST(RampSearch, BisectionStopsWhenTheBracketIsHalfAStepWide) {
  // Plenty of steps allowed, but 2 -> 3 can only be split once (2.5).
  RampSearch s({1, 2, 3}, 10);
  auto tried = Drive(&s, [](double v) { return v <= 2.7; });
  EXPECT_EQ(tried, (std::vector<double>{1, 2, 3, 2.5}));
  EXPECT_EQ(s.last_pass(), 2.5);
  EXPECT_EQ(s.first_fail(), 3);
}

TEST(RampSearch, BisectionAlwaysStaysInsideTheBracket) {
  for (double capacity : {1.2, 4.9, 7.5, 16.0, 24.9}) {
    RampSearch s({1, 2, 3, 5, 8, 12, 17, 25}, 6);
    auto tried = Drive(&s, [&](double v) { return v <= capacity; });
    ASSERT_TRUE(s.has_pass() && s.has_fail()) << capacity;
    EXPECT_LE(s.last_pass(), capacity);
    EXPECT_GT(s.first_fail(), capacity);
    EXPECT_LE(s.first_fail() - s.last_pass(), 1.0) << capacity;
    EXPECT_LE(tried.size(), 8u + 6u);
  }
}

TEST(RampSearch, APhaseWhoseFirstStepFailsEndsAtOnce) {
  RampSearch s({1, 2, 3}, 3);
  auto tried = Drive(&s, [](double) { return false; });
  EXPECT_EQ(tried, (std::vector<double>{1}));
  EXPECT_FALSE(s.has_pass());
  EXPECT_EQ(s.first_fail(), 1);
  EXPECT_FALSE(s.bisecting());
  EXPECT_EQ(s.MaxRemaining(), 0);
}

TEST(RampChooseBest, PicksTheMostAcceptedItemsAmongPassingSteps) {
  std::vector<StepScore> steps = {{true, 200}, {true, 2000}, {false, 9000}, {true, 1500}};
  EXPECT_EQ(ChooseBest(steps), 1);
}

TEST(RampChooseBest, ATieGoesToTheEarlierStep) {
  std::vector<StepScore> steps = {{true, 100}, {true, 8192}, {true, 8192}};
  EXPECT_EQ(ChooseBest(steps), 1);
}

TEST(RampChooseBest, NoPassingStepIsMinusOne) {
  EXPECT_EQ(ChooseBest({}), -1);
  EXPECT_EQ(ChooseBest({{false, 500}, {false, 10}}), -1);
}

TEST(RampFleet, ConnectionsFollowTheRateWithinFourToSixtyFour) {
  EXPECT_EQ(FleetConnections(20), 4);
  EXPECT_EQ(FleetConnections(50), 4);
  EXPECT_EQ(FleetConnections(100), 5);
  EXPECT_EQ(FleetConnections(400), 20);
  EXPECT_EQ(FleetConnections(1600), 64);
  EXPECT_EQ(FleetConnections(3200), 64);
}

TEST(RampEta, UsesTheMeanStepTimeOnceAStepFinished) {
  EXPECT_DOUBLE_EQ(EtaSeconds(0, 0, 4, 6), 24);
  EXPECT_DOUBLE_EQ(EtaSeconds(2, 12, 3, 100), 18);
  EXPECT_DOUBLE_EQ(EtaSeconds(5, 30, 0, 6), 0);
}

}  // namespace
}  // namespace sightline::bench
