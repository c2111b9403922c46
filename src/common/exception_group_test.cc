#include "common/exception_group.h"

#include <gtest/gtest.h>

namespace sightline {
namespace {

TEST(NormalizeExceptionMessageTest, MessagesThatDifferOnlyInIdsShareOneText) {
  EXPECT_EQ(NormalizeExceptionMessage("user 12345 not found"), "user <n> not found");
  EXPECT_EQ(NormalizeExceptionMessage("user 67890 not found"), "user <n> not found");
  EXPECT_EQ(NormalizeExceptionMessage("order 550e8400-e29b-41d4-a716-446655440000 is locked"),
            "order <uuid> is locked");
  EXPECT_EQ(NormalizeExceptionMessage("order 6BA7B810-9DAD-11D1-80B4-00C04FD430C8 is locked"),
            "order <uuid> is locked");
  EXPECT_EQ(NormalizeExceptionMessage("trace 4bf92f3577b34da6a3ce929d0e0e4736 missing"), "trace <hex> missing");
  EXPECT_EQ(NormalizeExceptionMessage("segfault at 0x7ffd5e8a1b2c"), "segfault at <hex>");
  EXPECT_EQ(NormalizeExceptionMessage("document 507f1f77bcf86cd799439011 gone"), "document <hex> gone");
}

TEST(NormalizeExceptionMessageTest, NumbersInsideWordsAndDecimalsAreMasked) {
  EXPECT_EQ(NormalizeExceptionMessage("timeout after 3.5s on worker-7"), "timeout after <n>s on worker-<n>");
  EXPECT_EQ(NormalizeExceptionMessage("worker7 died"), "worker<n> died");
  EXPECT_EQ(NormalizeExceptionMessage("upgrade to v1.2 failed"), "upgrade to v<n>.<n> failed");
  EXPECT_EQ(NormalizeExceptionMessage("connect 10.0.0.12:5432 refused"), "connect <n>.<n>:<n> refused");
  EXPECT_EQ(NormalizeExceptionMessage("id=42, retry=3"), "id=<n>, retry=<n>");
}

TEST(NormalizeExceptionMessageTest, WordsWithoutDigitsAndTextAroundAreKept) {
  EXPECT_EQ(NormalizeExceptionMessage(""), "");
  EXPECT_EQ(NormalizeExceptionMessage("connection refused"), "connection refused");
  // Hex letters alone are words ("deadbeef", "facade"), not ids.
  EXPECT_EQ(NormalizeExceptionMessage("deadbeef facade"), "deadbeef facade");
  // A short hex-looking word keeps its letters; only its digits are masked.
  EXPECT_EQ(NormalizeExceptionMessage("sha a1b2c3"), "sha a<n>b<n>c<n>");
  // Non-ASCII text and punctuation pass through unchanged.
  EXPECT_EQ(NormalizeExceptionMessage("Benutzer \xc3\xbc 12 nicht gefunden: \"x\""),
            "Benutzer \xc3\xbc <n> nicht gefunden: \"x\"");
  // All-digit runs of any length are numbers, so ids of different lengths
  // do not split a group.
  EXPECT_EQ(NormalizeExceptionMessage("user 1234567 not found"), NormalizeExceptionMessage("user 12345678 not found"));
  // A UUID followed by more letters is not a UUID.
  EXPECT_EQ(NormalizeExceptionMessage("550e8400-e29b-41d4-a716-446655440000x"), "<hex>-e<n>b-<n>d<n>-a<n>-<n>x");
}

}  // namespace
}  // namespace sightline
