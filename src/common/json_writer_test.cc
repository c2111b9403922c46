// JsonWriter: exact output for structure and escapes, and that what it writes
// is JSON an independent parser (protobuf's, into google.protobuf.Value)
// reads back to the same values.

#include "common/json_writer.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace sightline {
namespace {

//! Parses JSON text with protobuf's parser; fails the test when it is not JSON.
google::protobuf::Value ParseJson(const std::string& json) {
  google::protobuf::Value v;
  auto st = google::protobuf::util::JsonStringToMessage(json, &v);
  EXPECT_TRUE(st.ok()) << st.message() << " in " << json;
  return v;
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonStringTest, PlainTextIsQuotedUnchanged) {
  EXPECT_EQ(Quoted(""), "\"\"");
  EXPECT_EQ(Quoted("hello world"), "\"hello world\"");
  EXPECT_EQ(Quoted("h\xc3\xa9llo \xe2\x82\xac"), "\"h\xc3\xa9llo \xe2\x82\xac\"");  // UTF-8 passes through
}

TEST(JsonStringTest, EscapesQuotesBackslashAndNamedControls) {
  EXPECT_EQ(Quoted("a\"b"), R"("a\"b")");
  EXPECT_EQ(Quoted("a\\b"), R"("a\\b")");
  EXPECT_EQ(Quoted("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(Quoted("\"\\\""), R"("\"\\\"")");
}

TEST(JsonStringTest, OtherControlCharactersBecomeUnicodeEscapes) {
  EXPECT_EQ(Quoted(std::string_view("\x00", 1)), R"("\u0000")");
  EXPECT_EQ(Quoted("\x01"), R"("\u0001")");
  EXPECT_EQ(Quoted("\x1f"), R"("\u001f")");
  EXPECT_EQ(Quoted("x\x0by"), R"("x\u000by")");
  EXPECT_EQ(Quoted("\x7f"), "\"\x7f\"");  // DEL is not a JSON control character
  EXPECT_EQ(Quoted(" "), "\" \"");
}

TEST(JsonStringTest, EveryByteBelow0x80RoundTripsThroughAParser) {
  std::string all;
  for (int c = 0; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  google::protobuf::Value v = ParseJson(Quoted(all));
  ASSERT_EQ(v.kind_case(), google::protobuf::Value::kStringValue);
  EXPECT_EQ(v.string_value(), all);
}

TEST(JsonWriterTest, EmptyContainers) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  w.BeginObject();
  w.EndObject();
  w.BeginArray();
  w.EndArray();
  w.BeginObject();
  w.EndObject();
  w.EndArray();
  EXPECT_EQ(out, "[{},[],{}]");
}

TEST(JsonWriterTest, KeyValuePairsAndNestingPlaceCommas) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("s");
  w.String("v");
  w.Key("i");
  w.Int(-42);
  w.Key("u");
  w.Uint(42);
  w.Key("b");
  w.Bool(true);
  w.Key("f");
  w.Bool(false);
  w.Key("n");
  w.Null();
  w.Key("arr");
  w.BeginArray();
  w.Int(1);
  w.BeginObject();
  w.Key("x");
  w.BeginArray();
  w.EndArray();
  w.Key("y");
  w.BeginObject();
  w.EndObject();
  w.EndObject();
  w.String("z");
  w.BeginArray();
  w.Int(2);
  w.Int(3);
  w.EndArray();
  w.EndArray();
  w.Key("raw");
  w.Raw(R"({"pre":[1,2]})");
  w.Key("last");
  w.Int(0);
  w.EndObject();
  EXPECT_EQ(out, R"({"s":"v","i":-42,"u":42,"b":true,"f":false,"n":null,)"
                 R"("arr":[1,{"x":[],"y":{}},"z",[2,3]],"raw":{"pre":[1,2]},"last":0})");
  google::protobuf::Value v = ParseJson(out);
  const auto& fields = v.struct_value().fields();
  EXPECT_EQ(fields.size(), 9u);
  EXPECT_EQ(fields.at("arr").list_value().values_size(), 4);
  EXPECT_EQ(fields.at("raw").struct_value().fields().at("pre").list_value().values(1).number_value(), 2);
}

TEST(JsonWriterTest, RawValuesInArraysAreSeparated) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  w.Raw("{}");
  w.Raw("[1]");
  w.Raw("\"x\"");
  w.EndArray();
  EXPECT_EQ(out, R"([{},[1],"x"])");
}

TEST(JsonWriterTest, KeysAreEscaped) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("a\"b\n");
  w.Int(1);
  w.EndObject();
  EXPECT_EQ(out, R"({"a\"b\n":1})");
  EXPECT_EQ(ParseJson(out).struct_value().fields().at("a\"b\n").number_value(), 1);
}

TEST(JsonWriterTest, AppendsToExistingText) {
  std::string out = "prefix:";
  JsonWriter w(&out);
  w.BeginArray();
  w.Int(1);
  w.EndArray();
  EXPECT_EQ(out, "prefix:[1]");
}

TEST(JsonWriterTest, IntegerExtremes) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  w.Int(std::numeric_limits<int64_t>::min());
  w.Int(std::numeric_limits<int64_t>::max());
  w.Uint(std::numeric_limits<uint64_t>::max());
  w.Int(0);
  w.EndArray();
  EXPECT_EQ(out, "[-9223372036854775808,9223372036854775807,18446744073709551615,0]");
}

TEST(JsonWriterTest, DoublesUseTheShortestRoundTripForm) {
  const double values[] = {
      0.0, -0.0, 1.0, 0.1, -2.5, 1e300, 1e-300, 123456789.125, 5e-324, std::numeric_limits<double>::max(), 1.0 / 3.0};
  for (double d : values) {
    std::string out;
    JsonWriter w(&out);
    w.Double(d);
    double back = std::strtod(out.c_str(), nullptr);
    EXPECT_EQ(back, d) << out;
    EXPECT_EQ(std::signbit(back), std::signbit(d)) << out;
    EXPECT_EQ(ParseJson(out).number_value(), d) << out;
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  w.Double(0.1);
  w.Double(2.0);
  w.Double(-1.5e10);
  w.EndArray();
  EXPECT_EQ(out, "[0.1,2,-1.5e+10]");
}

TEST(JsonWriterTest, NonFiniteDoublesBecomeStrings) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  w.Double(std::numeric_limits<double>::quiet_NaN());
  w.Double(std::numeric_limits<double>::infinity());
  w.Double(-std::numeric_limits<double>::infinity());
  w.EndArray();
  EXPECT_EQ(out, R"(["NaN","Infinity","-Infinity"])");
  ParseJson(out);
}

}  // namespace
}  // namespace sightline
