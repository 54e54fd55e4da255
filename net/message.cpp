#include "net/message.h"

#include <algorithm>
#include <cctype>

#include <unistd.h>

namespace jobctl::net {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Header names compare without case (RFC 9110, 5.1).
bool same_header_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

Expected<std::string> decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size())
        return make_error(ErrorCode::invalid_argument, "bad percent-escape in the request target", "target");
      const int hi = hex_value(s[i + 1]);
      const int lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0)
        return make_error(ErrorCode::invalid_argument, "bad percent-escape in the request target", "target");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

BodyFile::~BodyFile() {
  if (!taken_.load()) ::unlink(path_.c_str());
}

std::optional<std::string> HttpRequest::query_param(std::string_view name) const {
  std::optional<std::string> found;
  for (const auto& [k, v] : query)
    if (k == name) found = v;
  return found;
}

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (same_header_name(k, name)) return std::string_view(v);
  return std::nullopt;
}

void HttpRequest::set_header(std::string_view name, std::string value) {
  std::erase_if(headers, [name](const auto& h) { return same_header_name(h.first, name); });
  headers.emplace_back(std::string(name), std::move(value));
}

std::string HttpRequest::header_or_empty(std::string_view name) const {
  return std::string(header(name).value_or(std::string_view()));
}

Status parse_target(std::string_view target, HttpRequest& out) {
  if (target.empty() || target.front() != '/')
    return make_error(ErrorCode::invalid_argument, "the request target must be a path starting with '/'", "target");
  const size_t q = target.find('?');
  auto path = decode(target.substr(0, q), /*plus_is_space=*/false);
  if (!path) return path.error();
  out.path = std::move(*path);
  out.query.clear();
  if (q == std::string_view::npos) return {};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto key = decode(pair.substr(0, eq), true);
    if (!key) return key.error();
    auto value = decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
    if (!value) return value.error();
    out.query.emplace_back(std::move(*key), std::move(*value));
  }
  return {};
}

std::string media_type_of(std::string_view ct) {
  std::string lower(ct.substr(0, ct.find(';')));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  while (!lower.empty() && std::isspace(static_cast<unsigned char>(lower.back()))) lower.pop_back();
  while (!lower.empty() && std::isspace(static_cast<unsigned char>(lower.front()))) lower.erase(lower.begin());
  return lower;
}

bool is_json_content_type(std::string_view ct) { return media_type_of(ct) == "application/json"; }

}  // namespace jobctl::net
