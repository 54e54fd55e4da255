#include "net/json_body.h"

#include <charconv>

#include "net/http_status.h"

namespace jobctl::net {

using nlohmann::json;

int http_status_for(const Error& e) { return http_status_for(e.code); }

HttpResponse error_response(const Error& e) {
  json body = {{"error",
                {{"code", to_string(e.code)},
                 {"message", e.message},
                 {"field", e.field.empty() ? json(nullptr) : json(e.field)}}}};
  return json_response(http_status_for(e), body);
}

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  r.body.push_back('\n');
  return r;
}

namespace {

// nlohmann's own DOM builder behind a depth check and a budget of the bytes the values take in
// memory: the first object or array past the depth, or the first value past the budget, stops
// the parse (a SAX handler that answers false ends it).
class LimitedDom {
 public:
  explicit LimitedDom(json& result) : dom_(result, /*allow_exceptions=*/false) {}

  bool too_deep() const { return too_deep_; }
  bool too_large() const { return too_large_; }

  bool null() { return spend(0) && dom_.null(); }
  bool boolean(bool v) { return spend(0) && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return spend(0) && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return spend(0) && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return spend(0) && dom_.number_float(v, s); }
  bool string(json::string_t& v) { return spend(v.size()) && dom_.string(v); }
  bool binary(json::binary_t& v) { return spend(v.size()) && dom_.binary(v); }
  bool key(json::string_t& v) { return spend(v.size()) && dom_.key(v); }
  bool start_object(std::size_t n) { return enter() && spend(0) && dom_.start_object(n); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return enter() && spend(0) && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    return dom_.parse_error(position, token, e);
  }

 private:
  bool enter() {
    if (++depth_ <= kMaxJsonDepth) return true;
    too_deep_ = true;
    return false;
  }
  // A value's cost: the json node, its allocation (an object's map node, a string's buffer) and
  // its text. "[{},{},...]" takes some 20 times its text in memory.
  bool spend(size_t text_bytes) {
    constexpr size_t kPerValue = 64;
    spent_ += kPerValue + text_bytes;
    if (spent_ <= kMaxJsonBodyValueBytes) return true;
    too_large_ = true;
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  size_t depth_ = 0;
  size_t spent_ = 0;
  bool too_deep_ = false;
  bool too_large_ = false;
};

}  // namespace

Expected<json> parse_json_body(std::string_view text) {
  json result;
  LimitedDom dom(result);
  const bool ok = json::sax_parse(text, &dom);
  if (dom.too_deep())
    return make_error(ErrorCode::invalid_argument,
                      "the body nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                      "body");
  if (dom.too_large())
    return make_error(ErrorCode::payload_too_large,
                      "the body's values would take more than " + std::to_string(kMaxJsonBodyValueBytes) +
                          " bytes in memory once parsed (64 bytes a value and its text; the limit); send fewer values",
                      "body");
  if (!ok) return make_error(ErrorCode::malformed_json, "the body is not valid JSON", "body");
  return result;
}

namespace {

size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  return i;
}

// The end of the string token that starts at t[i] == '"' (one past its closing quote).
size_t skip_string(std::string_view t, size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') ++i;
    else if (t[i] == '"') return i + 1;
  }
  return t.size();
}

// The end of the value that starts at t[i]: strings skipped whole, brackets counted (no
// recursion, so any depth is safe), a scalar up to the next delimiter.
size_t skip_value(std::string_view t, size_t i) {
  if (i < t.size() && t[i] == '"') return skip_string(t, i);
  if (i < t.size() && (t[i] == '{' || t[i] == '[')) {
    size_t depth = 0;
    for (; i < t.size(); ++i) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i) - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return t.size();
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' && t[i] != '\n' &&
         t[i] != '\r')
    ++i;
  return i;
}

}  // namespace

std::optional<std::string_view> member_text(std::string_view t, std::string_view key) {
  size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return std::nullopt;
  i = skip_space(t, i + 1);
  while (i < t.size() && t[i] == '"') {
    const size_t key_end = skip_string(t, i);
    // A key may be written with escapes: compare what it says, not how it is spelt.
    const json name = json::parse(t.substr(i, key_end - i), nullptr, /*allow_exceptions=*/false);
    i = skip_space(t, key_end);
    if (i >= t.size() || t[i] != ':') return std::nullopt;
    const size_t value_begin = skip_space(t, i + 1);
    const size_t value_end = skip_value(t, value_begin);
    if (name.is_string() && name.get_ref<const std::string&>() == key)
      return t.substr(value_begin, value_end - value_begin);
    i = skip_space(t, value_end);
    if (i < t.size() && t[i] == ',') i = skip_space(t, i + 1);
  }
  return std::nullopt;
}

Expected<json> json_object_body(const HttpRequest& request, bool required) {
  if (request.body.empty()) {
    if (required) return make_error(ErrorCode::invalid_argument, "a JSON body is required", "body");
    return json::object();
  }
  if (!is_json_content_type(request.content_type))
    return make_error(ErrorCode::unsupported_media_type,
                      "the body must be sent with Content-Type: application/json (got '" +
                          request.content_type + "')",
                      "Content-Type");
  auto parsed = parse_json_body(request.body);
  if (!parsed) return parsed.error();
  if (!parsed->is_object()) return make_error(ErrorCode::invalid_argument, "the body must be a JSON object", "body");
  return std::move(*parsed);
}

Status only_keys(const json& obj, std::initializer_list<std::string_view> allowed,
                 std::string_view prefix) {
  for (const auto& item : obj.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || item.key() == a;
    if (!ok) {
      const std::string field = std::string(prefix) + item.key();
      return make_error(ErrorCode::invalid_argument, "unknown field " + field, field);
    }
  }
  return {};
}

Expected<int64_t> int_field(const json& obj, std::string_view key, int64_t min,
                            std::optional<int64_t> fallback) {
  const std::string k(key);
  auto it = obj.find(k);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::invalid_argument, k + " is required", k);
  }
  if (!it->is_number_integer())
    return make_error(ErrorCode::invalid_argument, k + " must be an integer", k);
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return make_error(ErrorCode::invalid_argument, k + " is too large", k);
  const int64_t v = it->get<int64_t>();
  if (v < min) return make_error(ErrorCode::invalid_argument, k + " must be >= " + std::to_string(min), k);
  return v;
}

Expected<std::string> string_field(const json& obj, std::string_view key, size_t max_len,
                                   std::optional<std::string> fallback) {
  const std::string k(key);
  auto it = obj.find(k);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::invalid_argument, k + " is required", k);
  }
  if (!it->is_string()) return make_error(ErrorCode::invalid_argument, k + " must be a string", k);
  std::string s = it->get<std::string>();
  if (s.size() > max_len)
    return make_error(ErrorCode::invalid_argument,
                      k + " is longer than " + std::to_string(max_len) + " bytes", k);
  return s;
}

Expected<int64_t> parse_int_param(std::string_view text, std::string_view field, int64_t min,
                                  int64_t max) {
  int64_t v = 0;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  const std::string f(field);
  if (text.empty() || ec != std::errc() || p != end)
    return make_error(ErrorCode::invalid_argument, f + " must be an integer (got '" + std::string(text.substr(0, 40)) + "')", f);
  if (v < min || v > max)
    return make_error(ErrorCode::invalid_argument,
                      f + " must be between " + std::to_string(min) + " and " + std::to_string(max), f);
  return v;
}

Error unknown_query_parameter(std::string_view key) {
  const std::string k(key.substr(0, 40));
  return Error{ErrorCode::invalid_argument, "unknown query parameter " + k, k};
}

Status only_query_keys(const HttpRequest& request, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : request.query) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) return unknown_query_parameter(key);
  }
  return {};
}

}  // namespace jobctl::net
