// Result misuse fails loudly, SL_ASSIGN_OR_RETURN, and SL_DCHECK in both build
// kinds (checked in Debug, compiled out and not evaluated under NDEBUG).

#include "common/status.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "common/assert.h"

namespace sightline {
namespace {

Result<int> Parse(const std::string& s) {
  if (s.empty()) return Status::InvalidArgument("empty number");
  return std::stoi(s);
}

TEST(ResultTest, ValueOfAnOkResult) {
  Result<int> r = Parse("42");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  Result<std::string> s = std::string("abc");
  EXPECT_EQ(s->size(), 3u);
  std::string moved = std::move(s).value();
  EXPECT_EQ(moved, "abc");
}

TEST(ResultDeathTest, ValueOfAnErrorAbortsWithTheStatus) {
  Result<int> r = Parse("");
  ASSERT_FALSE(r.ok());
  EXPECT_DEATH(static_cast<void>(r.value()), "Result::value\\(\\) of an error: INVALID_ARGUMENT: empty number");
  EXPECT_DEATH(static_cast<void>(*r), "INVALID_ARGUMENT: empty number");
  const Result<std::string> s = Status::NotFound("no such trace");
  EXPECT_DEATH(static_cast<void>(s->size()), "NOT_FOUND: no such trace");
  EXPECT_DEATH(static_cast<void>(std::move(r).value()), "empty number");
}

Result<int> SumOfTwo(const std::string& a, const std::string& b, int* reached) {
  SL_ASSIGN_OR_RETURN(int x, Parse(a));
  ++*reached;
  int y = 0;
  SL_ASSIGN_OR_RETURN(y, Parse(b));  // into an existing variable
  ++*reached;
  return x + y;
}

TEST(AssignOrReturnTest, AssignsTheValueOrReturnsTheError) {
  int reached = 0;
  Result<int> sum = SumOfTwo("40", "2", &reached);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*sum, 42);
  EXPECT_EQ(reached, 2);

  reached = 0;
  Result<int> first = SumOfTwo("", "2", &reached);
  EXPECT_EQ(first.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(first.status().message(), "empty number");
  EXPECT_EQ(reached, 0) << "did not return at the first error";

  reached = 0;
  Result<int> second = SumOfTwo("1", "", &reached);
  EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reached, 1);
}

Result<std::unique_ptr<int>> MakeBox(bool ok) {
  if (!ok) return Status::Unavailable("no box today");
  return std::make_unique<int>(7);
}

Status OpenBox(bool ok, int* out) {
  SL_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(ok));  // move-only values move
  *out = *box;
  return Status::Ok();
}

TEST(AssignOrReturnTest, WorksInStatusFunctionsAndWithMoveOnlyValues) {
  int got = 0;
  EXPECT_TRUE(OpenBox(true, &got).ok());
  EXPECT_EQ(got, 7);
  Status st = OpenBox(false, &got);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "no box today");
}

#ifndef NDEBUG

TEST(DCheckDeathTest, AFailedCheckAbortsWithFileAndLine) {
  int rows = 3;
  EXPECT_DEATH(SL_DCHECK(rows < 2), "status_test.cc:[0-9]+: check failed: rows < 2");
  SL_DCHECK(rows == 3);  // a true check does nothing
}

TEST(ResultDeathTest, AnOkStatusWithoutAValueIsABug) {
  EXPECT_DEATH(static_cast<void>(Result<int>(Status::Ok())), R"(check failed: !status_\.ok\(\))");
}

#else

TEST(DCheckTest, CompiledOutUnderNDEBUG) {
  int evaluated = 0;
  SL_DCHECK(++evaluated < 0);
  EXPECT_EQ(evaluated, 0) << "the condition must not even be evaluated in release builds";
}

TEST(ResultTest, AnOkStatusWithoutAValueBecomesInternal) {
  Result<int> r = Status::Ok();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

#endif

}  // namespace
}  // namespace sightline
