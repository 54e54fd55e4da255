#include "cloud/command_template.h"

namespace jobctl::cloud {

std::string shell_quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

namespace {

bool name_char(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }

}  // namespace

Expected<std::string> expand_command(std::string_view t, const Placeholders& values,
                                     const std::string& field, const Placeholders& raw) {
  std::string out;
  out.reserve(t.size() + 64);
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '{' && i + 1 < t.size() && t[i + 1] == '{') { out.push_back('{'); ++i; continue; }
    if (c == '}' && i + 1 < t.size() && t[i + 1] == '}') { out.push_back('}'); ++i; continue; }
    if (c != '{') { out.push_back(c); continue; }
    size_t end = i + 1;
    while (end < t.size() && name_char(t[end])) ++end;
    if (end >= t.size() || t[end] != '}' || end == i + 1) {
      out.push_back('{');  // not a placeholder (JSON, a --query expression): literal
      continue;
    }
    const std::string_view name = t.substr(i + 1, end - i - 1);
    if (auto r = raw.find(name); r != raw.end()) {
      out += r->second;
    } else if (auto v = values.find(name); v != values.end()) {
      out += shell_quote(v->second);
    } else {
      std::string known;
      for (const auto* m : {&values, &raw})
        for (const auto& [k, _] : *m) known += (known.empty() ? "" : ", ") + ("{" + k + "}");
      return make_error(ErrorCode::invalid_argument,
                        field + ": unknown placeholder {" + std::string(name) + "} (known: " + known + ")",
                        field);
    }
    i = end;
  }
  return out;
}

bool has_placeholders(std::string_view t) {
  for (size_t i = 0; i + 2 < t.size() + 1; ++i) {
    if (t[i] != '{') continue;
    if (i + 1 < t.size() && t[i + 1] == '{') { ++i; continue; }
    size_t end = i + 1;
    while (end < t.size() && name_char(t[end])) ++end;
    if (end < t.size() && t[end] == '}' && end > i + 1) return true;
  }
  return false;
}

std::string job_flags(int64_t for_job, const std::vector<std::string>& worker_flags) {
  if (for_job <= 0) return {};
  std::string flags = " --for-job " + std::to_string(for_job) + " --allow-commands";
  for (const std::string& f : worker_flags) flags += " " + shell_quote(f);
  return flags;
}

}  // namespace jobctl::cloud
