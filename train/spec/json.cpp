#include "train/spec/json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace jobctl::train::json {

Value::Value(uint64_t u) {
  if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    v_ = static_cast<int64_t>(u);
  else
    v_ = static_cast<double>(u);
}

Value::Type Value::type() const {
  switch (v_.index()) {
    case 0: return Type::null;
    case 1: return Type::boolean;
    case 2: return Type::integer;
    case 3: return Type::number;
    case 4: return Type::string;
    case 5: return Type::array;
    default: return Type::object;
  }
}

double Value::as_double() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  return std::get<double>(v_);
}

Array& Value::as_array() {
  auto& p = std::get<std::shared_ptr<Array>>(v_);
  if (p.use_count() > 1) p = std::make_shared<Array>(*p);
  return *p;
}

Object& Value::as_object() {
  auto& p = std::get<std::shared_ptr<Object>>(v_);
  if (p.use_count() > 1) p = std::make_shared<Object>(*p);
  return *p;
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}

void Value::set(std::string_view key, Value v) {
  if (!is_object()) *this = Value(Object{});
  auto& obj = as_object();
  for (auto& [k, existing] : obj) {
    if (k == key) {
      existing = std::move(v);
      return;
    }
  }
  obj.emplace_back(std::string(key), std::move(v));
}

std::string Value::dump() const {
  std::string out;
  write(out, *this);
  return out;
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integer() && b.is_integer()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::null: return true;
    case Value::Type::boolean: return a.as_bool() == b.as_bool();
    case Value::Type::string: return a.as_string() == b.as_string();
    case Value::Type::array: return a.as_array() == b.as_array();
    case Value::Type::object: return a.as_object() == b.as_object();
    default: return false;
  }
}

std::string_view type_name(Value::Type t) {
  switch (t) {
    case Value::Type::null: return "null";
    case Value::Type::boolean: return "a boolean";
    case Value::Type::integer: return "an integer";
    case Value::Type::number: return "a number";
    case Value::Type::string: return "a string";
    case Value::Type::array: return "an array";
    case Value::Type::object: return "an object";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Writing

void write_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

namespace {
template <class F>
void write_float(std::string& out, F x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  out.append(buf, res.ptr);
}
}  // namespace

void write_number(std::string& out, double d) { write_float(out, d); }
void write_number(std::string& out, float f) { write_float(out, f); }

void write(std::string& out, const Value& v) {
  switch (v.type()) {
    case Value::Type::null: out += "null"; break;
    case Value::Type::boolean: out += v.as_bool() ? "true" : "false"; break;
    case Value::Type::integer: out += std::to_string(v.as_int()); break;
    case Value::Type::number:
      if (v.single_)
        write_number(out, static_cast<float>(v.as_double()));
      else
        write_number(out, v.as_double());
      break;
    case Value::Type::string: write_string(out, v.as_string()); break;
    case Value::Type::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.as_array()) {
        if (!first) out.push_back(',');
        first = false;
        write(out, e);
      }
      out.push_back(']');
      break;
    }
    case Value::Type::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.as_object()) {
        if (!first) out.push_back(',');
        first = false;
        write_string(out, k);
        out.push_back(':');
        write(out, e);
      }
      out.push_back('}');
      break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Expected<Value> run() {
    skip_ws();
    Value v;
    if (!parse_value(v, 0)) return fail_error();
    skip_ws();
    if (pos_ != s_.size()) {
      set_error("unexpected text after the JSON value");
      return fail_error();
    }
    return v;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::string err_;
  size_t err_pos_ = 0;

  bool set_error(std::string msg) {
    if (err_.empty()) {
      err_ = std::move(msg);
      err_pos_ = pos_;
    }
    return false;
  }

  Error fail_error() const {
    int line = 1, col = 1;
    for (size_t i = 0; i < err_pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return make_error(ErrorCode::malformed_json, "malformed JSON at line " + std::to_string(line) +
                                            ", column " + std::to_string(col) + ": " + err_);
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  void skip_ws() {
    while (!at_end()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        ++pos_;
      else
        break;
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return set_error("invalid literal");
  }

  bool parse_value(Value& out, int depth) {
    if (at_end()) return set_error("unexpected end of input");
    switch (peek()) {
      case '{': return parse_object(out, depth + 1);
      case '[': return parse_array(out, depth + 1);
      case '"': {
        std::string str;
        if (!parse_string(str)) return false;
        out = Value(std::move(str));
        return true;
      }
      case 't':
        if (!literal("true")) return false;
        out = Value(true);
        return true;
      case 'f':
        if (!literal("false")) return false;
        out = Value(false);
        return true;
      case 'n':
        if (!literal("null")) return false;
        out = Value(nullptr);
        return true;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number(out);
        return set_error(std::string("unexpected character '") + peek() + "'");
    }
  }

  bool parse_object(Value& out, int depth) {
    if (depth > kMaxDepth) return set_error("nesting deeper than " + std::to_string(kMaxDepth));
    ++pos_;  // {
    Object obj;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      out = Value(std::move(obj));
      return true;
    }
    while (true) {
      skip_ws();
      if (peek() != '"') return set_error("expected a string key");
      const size_t key_pos = pos_;
      std::string key;
      if (!parse_string(key)) return false;
      for (const auto& m : obj) {
        if (m.first == key) {
          pos_ = key_pos;
          return set_error("duplicate key \"" + key + "\"");
        }
      }
      skip_ws();
      if (peek() != ':') return set_error("expected ':' after a key");
      ++pos_;
      skip_ws();
      Value v;
      if (!parse_value(v, depth)) return false;
      obj.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = Value(std::move(obj));
        return true;
      }
      return set_error("expected ',' or '}' in an object");
    }
  }

  bool parse_array(Value& out, int depth) {
    if (depth > kMaxDepth) return set_error("nesting deeper than " + std::to_string(kMaxDepth));
    ++pos_;  // [
    Array arr;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      out = Value(std::move(arr));
      return true;
    }
    while (true) {
      skip_ws();
      Value v;
      if (!parse_value(v, depth)) return false;
      arr.push_back(std::move(v));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        out = Value(std::move(arr));
        return true;
      }
      return set_error("expected ',' or ']' in an array");
    }
  }

  bool hex4(uint32_t& cp) {
    if (pos_ + 4 > s_.size()) return set_error("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        cp |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        cp |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return set_error("invalid hex digit in \\u escape");
    }
    return true;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Checks one UTF-8 sequence starting at pos_ (already known to be >= 0x80) and copies it.
  bool utf8_sequence(std::string& out) {
    const auto b0 = static_cast<unsigned char>(s_[pos_]);
    int len;
    uint32_t cp;
    if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07;
    } else {
      return set_error("invalid UTF-8 in a string");
    }
    if (pos_ + static_cast<size_t>(len) > s_.size()) return set_error("truncated UTF-8 in a string");
    for (int i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(s_[pos_ + static_cast<size_t>(i)]);
      if ((b & 0xC0) != 0x80) return set_error("invalid UTF-8 in a string");
      cp = (cp << 6) | (b & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return set_error("invalid UTF-8 in a string");
    out.append(s_.substr(pos_, static_cast<size_t>(len)));
    pos_ += static_cast<size_t>(len);
    return true;
  }

  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (at_end()) return set_error("unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return set_error("control character in a string");
      if (c >= 0x80) {
        if (!utf8_sequence(out)) return false;
        continue;
      }
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      ++pos_;
      if (at_end()) return set_error("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") return set_error("unpaired surrogate in \\u escape");
            pos_ += 2;
            uint32_t lo;
            if (!hex4(lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return set_error("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return set_error("unpaired surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default: return set_error("invalid escape");
      }
    }
  }

  bool parse_number(Value& out) {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') return set_error("leading zeros are not allowed");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      return set_error("invalid number");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return set_error("digits expected after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return set_error("digits expected in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      auto r = std::from_chars(first, last, i);
      if (r.ec == std::errc() && r.ptr == last) {
        out = Value(i);
        return true;
      }
      // Too large for int64: keep it as a double, as most JSON readers do.
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && !std::isfinite(d)))
      return set_error("number out of range");
    if (r.ec != std::errc() || r.ptr != last) return set_error("invalid number");
    out = Value(d);
    return true;
  }
};

}  // namespace

Expected<Value> parse(std::string_view text) { return Parser(text).run(); }

}  // namespace jobctl::train::json
