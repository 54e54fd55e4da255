#include "train/spec/image_reference.h"

#include <algorithm>
#include <cctype>

namespace jobctl::train {

namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: lowercase letters and digits, joined by ".", "_", "__" or runs of "-".
bool path_component_ok(std::string_view c) {
  if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    if (lower_alnum(c[i])) continue;
    size_t j = i;
    while (j < c.size() && !lower_alnum(c[j])) ++j;
    const std::string_view sep = c.substr(i, j - i);
    const bool dashes = std::all_of(sep.begin(), sep.end(), [](char s) { return s == '-'; });
    if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
    i = j - 1;
  }
  return true;
}

// A host name or IPv4 address, then an optional :port (a bracketed IPv6 address is accepted too).
bool registry_ok(std::string_view r) {
  std::string_view host = r;
  std::string_view port;
  bool has_port = false;
  if (!r.empty() && r.front() == '[') {
    const auto close = r.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    host = r.substr(0, close + 1);
    const std::string_view after = r.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return false;
      port = after.substr(1);
      has_port = true;
    }
  } else if (const auto colon = r.find(':'); colon != std::string_view::npos) {
    host = r.substr(0, colon);
    port = r.substr(colon + 1);
    has_port = true;
  }
  if (has_port) {
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    if (std::stoi(std::string(port)) > 65535) return false;
  }
  if (host.empty()) return false;
  if (host.front() == '[') return true;
  for (size_t start = 0; start <= host.size();) {
    const size_t dot = std::min(host.find('.', start), host.size());
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    start = dot + 1;
  }
  return true;
}

// The first component is a registry when it looks like a host (a dot, a port or localhost), as
// Docker and podman decide; "team/train" would be a short name resolved by each machine.
bool registry_host_ok(std::string_view r) {
  const bool looks_like_host =
      r.find('.') != std::string_view::npos || r.find(':') != std::string_view::npos || r == "localhost";
  return looks_like_host && registry_ok(r);
}

bool tag_ok(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  if (!(std::isalnum(static_cast<unsigned char>(t.front())) || t.front() == '_')) return false;
  return std::all_of(t.begin(), t.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; });
}

}  // namespace

Expected<std::string> parse_registry_host(std::string_view text, const std::string& field) {
  if (text.size() > 255 || !registry_host_ok(text))
    return make_error(ErrorCode::invalid_argument,
                      field + " must be a registry's host[:port], such as registry.example.com or 127.0.0.1:5000 "
                              "(a name without a dot or a port other than localhost is not a registry)",
                      field);
  return std::string(text);
}

Expected<ImageReference> parse_image_reference(std::string_view text, const std::string& field) {
  auto bad = [&](const std::string& why) -> Expected<ImageReference> {
    return make_error(ErrorCode::invalid_argument,
                      field + " " + why + " (an image is named host[:port]/name[:tag] or host[:port]/name@sha256:<digest>)",
                      field);
  };
  if (text.empty()) return bad("is empty");
  if (text.size() > 512) return bad("must be at most 512 characters");
  ImageReference ref;
  std::string_view rest = text;
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    const std::string_view digest = rest.substr(at + 1);
    const bool hex = digest.size() == 71 && digest.substr(0, 7) == "sha256:" &&
                     std::all_of(digest.begin() + 7, digest.end(),
                                 [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex) return bad("has a digest that is not sha256: and 64 lowercase hex digits");
    ref.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos)
    return bad("must name its registry: \"" + std::string(text) + "\" has no host before a \"/\"");
  const std::string_view registry = rest.substr(0, slash);
  if (!registry_host_ok(registry))
    return bad("must begin with a registry host (\"" + std::string(registry) + "\" is not a host[:port])");
  ref.registry = std::string(registry);
  std::string_view path = rest.substr(slash + 1);
  // The tag follows the last ':' after the last '/'.
  const auto last_slash = path.rfind('/');
  const auto colon = path.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    const std::string_view tag = path.substr(colon + 1);
    if (!tag_ok(tag)) return bad("has a tag that is not 1-128 of letters, digits, '_', '.' and '-'");
    ref.tag = std::string(tag);
    path = path.substr(0, colon);
  }
  if (path.empty()) return bad("has no repository name after the registry");
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    if (!path_component_ok(path.substr(start, end - start)))
      return bad("has a repository name that is not lowercase letters and digits joined by '.', '_' or '-'");
    start = end + 1;
  }
  ref.repository = std::string(path);
  return ref;
}

}  // namespace jobctl::train
