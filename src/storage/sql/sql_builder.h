#pragma once

// A SQL statement under construction with its bound parameters, for the
// shared SQL implementation of the read contract.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/sql/sql_connection.h"

namespace sightline::sql {

struct Sql {
  std::string text;
  std::vector<SqlParam> params;

  Sql& operator<<(std::string_view s) {
    text.append(s);
    return *this;
  }
  //! Appends a `?` bound to v. One overload per type, each constructing the
  //! parameter in place (g++ 12 warns falsely on moving a variant that
  //! holds an int).
  Sql& Bind(int64_t v) {
    text.push_back('?');
    params.emplace_back(std::in_place_type<int64_t>, v);
    return *this;
  }
  Sql& Bind(double v) {
    text.push_back('?');
    params.emplace_back(std::in_place_type<double>, v);
    return *this;
  }
  Sql& Bind(const std::string& v) {
    text.push_back('?');
    params.emplace_back(std::in_place_type<std::string>, v);
    return *this;
  }
  //! Appends another statement fragment with its parameters.
  Sql& Append(const Sql& other) {
    text += other.text;
    params.insert(params.end(), other.params.begin(), other.params.end());
    return *this;
  }
};

}  // namespace sightline::sql
