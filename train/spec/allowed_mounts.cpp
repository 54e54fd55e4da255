#include "train/spec/allowed_mounts.h"

namespace jobctl::train {

bool path_within(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root == "/") return !path.empty() && path.front() == '/';
  return path == root || (path.size() > root.size() && path.substr(0, root.size()) == root && path[root.size()] == '/');
}

Expected<AllowedMount> parse_allowed_mount(std::string_view text, const std::string& field) {
  AllowedMount m;
  std::string_view prefix = text;
  if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    const std::string_view mode = text.substr(colon + 1);
    if (mode != "rw" && mode != "ro")
      return make_error(ErrorCode::invalid_argument, field + " " + std::string(text) + ": the mode after ':' must be rw or ro", field);
    m.writable = mode == "rw";
    prefix = text.substr(0, colon);
  }
  if (prefix.empty() || prefix.front() != '/' || prefix.find("/../") != std::string_view::npos ||
      prefix.ends_with("/..") || prefix.find("/./") != std::string_view::npos)
    return make_error(ErrorCode::invalid_argument,
                      field + " " + std::string(text) + ": give an absolute folder without '.' or '..', e.g. /srv/datasets",
                      field);
  m.prefix = std::string(prefix);
  while (m.prefix.size() > 1 && m.prefix.back() == '/') m.prefix.pop_back();
  return m;
}

bool mount_allowed(std::string_view source, bool writable, const std::vector<AllowedMount>& allowed) {
  for (const AllowedMount& a : allowed)
    if (path_within(source, a.prefix) && (!writable || a.writable)) return true;
  return false;
}

}  // namespace jobctl::train
