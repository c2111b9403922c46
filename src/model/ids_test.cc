// Series and resource ids are stored: these pins hold the definition in
// docs/STORAGE.md ("Ids") to the code. The literals were computed with the
// xxHash library's one-shot XXH3_64bits(_withSeed) over the encoding written
// out by hand: a resource id is the hash of its four fields; a series id is
// the hash of its attributes, seeded with the hash of the other nine fields.

#include "model/ids.h"

#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

constexpr const char* kResource = R"({"service.name":"checkout"})";

TEST(IdsTest, ResourceIdIsPinned) {
  EXPECT_EQ(ResourceId(kResource, "io.opentelemetry.http", "1.2.3", "{}"), -3448183313121301593);
}

TEST(IdsTest, SeriesIdIsPinned) {
  SeriesMetric m{1, "http.server.duration", 3, "ms", 2, false, kResource, "io.opentelemetry.http", "1.2.3"};
  EXPECT_EQ(SeriesIdHasher(m).Id(R"({"http.route":"/a"})"), 5609145313718445769);
}

TEST(IdsTest, EveryIdentifyingFieldChangesTheSeriesId) {
  const SeriesMetric base{1, "m", 2, "ms", 1, true, kResource, "scope", "1"};
  const int64_t id = SeriesIdHasher(base).Id("{}");
  std::vector<SeriesMetric> variants(9, base);
  variants[0].project_id = 2;
  variants[1].metric_name = "n";
  variants[2].metric_type = 1;
  variants[3].unit = "s";
  variants[4].temporality = 2;
  variants[5].monotonic = false;
  variants[6].resource_attributes = "{}";
  variants[7].scope_name = "other";
  variants[8].scope_version = "2";
  for (size_t i = 0; i < variants.size(); ++i) EXPECT_NE(SeriesIdHasher(variants[i]).Id("{}"), id) << i;
  EXPECT_NE(SeriesIdHasher(base).Id(R"({"k":"v"})"), id);
}

TEST(IdsTest, OneHasherServesEveryPointOfAMetric) {
  const SeriesMetric m{1, "m", 1, "", 0, false, "{}", "", ""};
  SeriesIdHasher shared(m);
  for (const char* attrs : {"{}", R"({"a":1})", R"({"a":2})"}) EXPECT_EQ(shared.Id(attrs), SeriesIdHasher(m).Id(attrs));
}

}  // namespace
}  // namespace sightline
