// A small JSON value, strict parser and writer for train/.
//
// Why not nlohmann/json, which the rest of jobctl uses: train/ must build alone on a GPU machine
// that has only the C++ standard library and CUDA, and it reads job specs and writes JSON-lines
// progress. This is just enough JSON for that, strict where it matters for specs:
//  - RFC 8259 grammar only: no comments, no trailing commas, no NaN/Infinity, no leading zeros;
//  - duplicate keys in one object are an error (a spec must not be ambiguous);
//  - nesting deeper than kMaxDepth is an error (bounded stack on hostile input);
//  - integers that fit int64 are kept exactly (seeds up to 2^63-1), other numbers as double;
//  - objects keep their keys in document order.
// Output: numbers round-trip (shortest representation that reads back to the same double, or to
// the same float for values made from a float); strings are escaped per RFC 8259.
//
// Thread safety: values are plain data; distinct values may be used from distinct threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/expected.h"

namespace jobctl::train::json {

inline constexpr int kMaxDepth = 64;

class Value;
using Array = std::vector<Value>;
using Member = std::pair<std::string, Value>;
using Object = std::vector<Member>;

class Value {
 public:
  enum class Type { null, boolean, integer, number, string, array, object };

  Value() = default;  // null
  Value(std::nullptr_t) {}                             // NOLINT(google-explicit-constructor)
  Value(bool b) : v_(b) {}                             // NOLINT
  Value(int i) : v_(static_cast<int64_t>(i)) {}        // NOLINT
  Value(int64_t i) : v_(i) {}                          // NOLINT
  Value(uint64_t u);                                   // NOLINT: above INT64_MAX becomes a double
  Value(double d) : v_(d) {}                           // NOLINT
  Value(float f) : v_(static_cast<double>(f)), single_(true) {}  // NOLINT: written as a float
  Value(const char* s) : v_(std::string(s)) {}         // NOLINT
  Value(std::string s) : v_(std::move(s)) {}           // NOLINT
  Value(std::string_view s) : v_(std::string(s)) {}    // NOLINT
  Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}    // NOLINT
  Value(Object o) : v_(std::make_shared<Object>(std::move(o))) {}  // NOLINT

  Type type() const;
  bool is_null() const { return type() == Type::null; }
  bool is_bool() const { return type() == Type::boolean; }
  bool is_integer() const { return type() == Type::integer; }
  bool is_number() const { return type() == Type::integer || type() == Type::number; }
  bool is_string() const { return type() == Type::string; }
  bool is_array() const { return type() == Type::array; }
  bool is_object() const { return type() == Type::object; }

  // Accessors assume the type was checked.
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_double() const;  // integer or number
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  Array& as_array();   // copy-on-write: detaches a shared array before handing it out
  Object& as_object();

  // Object lookup (linear: spec objects are small). nullptr when absent or not an object.
  const Value* find(std::string_view key) const;
  // Appends or replaces a member of an object value.
  void set(std::string_view key, Value v);

  // A JSON text with no insignificant white space.
  std::string dump() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>>
      v_{nullptr};
  bool single_ = false;  // a float32 value: written with float precision
  friend void write(std::string& out, const Value& v);
};

// Parses one JSON text (surrounding white space allowed, nothing else). Errors have code
// "malformed_json" and a message with line and column.
[[nodiscard]] Expected<Value> parse(std::string_view text);

// Appends the JSON text of v to out.
void write(std::string& out, const Value& v);
// Appends s as a quoted, escaped JSON string.
void write_string(std::string& out, std::string_view s);
// Appends the shortest text that reads back as exactly d (or f). Non-finite values become null.
void write_number(std::string& out, double d);
void write_number(std::string& out, float f);

std::string_view type_name(Value::Type t);

}  // namespace jobctl::train::json
