#include "scheduler/spot_trace.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace jobctl::scheduler {

Expected<SpotTrace> parse_spot_trace(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(ErrorCode::malformed_json, "the trace is not valid JSON");
  if (!j.is_object()) return make_error(ErrorCode::invalid_argument, "the trace must be a JSON object");
  SpotTrace t;
  if (!j.contains("metadata") || !j["metadata"].is_object() || !j["metadata"].contains("gap_seconds") ||
      !j["metadata"]["gap_seconds"].is_number())
    return make_error(ErrorCode::invalid_argument, "the trace needs metadata.gap_seconds (a number)", "metadata.gap_seconds");
  t.gap_seconds = j["metadata"]["gap_seconds"].get<double>();
  if (!(std::isfinite(t.gap_seconds) && t.gap_seconds > 0))
    return make_error(ErrorCode::invalid_argument, "metadata.gap_seconds must be > 0", "metadata.gap_seconds");
  if (!j.contains("data") || !j["data"].is_array() || j["data"].empty())
    return make_error(ErrorCode::invalid_argument, "the trace needs data: a non-empty array", "data");
  const auto& data = j["data"];
  t.available.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const auto& v = data[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return make_error(ErrorCode::invalid_argument, "data[" + std::to_string(i) + "] must be a non-negative integer",
                        "data[" + std::to_string(i) + "]");
    t.available.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  if (j.contains("prices") && !j["prices"].is_null()) {
    const auto& p = j["prices"];
    if (!p.is_array() || p.size() != data.size())
      return make_error(ErrorCode::invalid_argument, "prices must be an array as long as data", "prices");
    t.prices.reserve(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number() || !(p[i].get<double>() >= 0))
        return make_error(ErrorCode::invalid_argument, "prices[" + std::to_string(i) + "] must be a non-negative number",
                          "prices[" + std::to_string(i) + "]");
      t.prices.push_back(p[i].get<double>());
    }
  }
  return t;
}

TraceStats trace_stats(const SpotTrace& t, size_t begin, size_t end) {
  TraceStats s;
  end = std::min(end, t.available.size());
  if (begin >= end) return s;
  const double g = t.gap_hours();
  size_t up = 0, up_runs = 0, down_runs = 0;
  for (size_t i = begin; i < end; ++i) {
    const bool a = t.available[i] > 0;
    const bool prev = i > begin ? t.available[i - 1] > 0 : !a;  // the first tick starts a run
    if (a) ++up;
    if (a && !prev) ++up_runs;
    if (!a && prev) {
      ++down_runs;
      if (i > begin) ++s.interruptions;
    }
  }
  const size_t n = end - begin;
  s.hours = static_cast<double>(n) * g;
  s.availability = static_cast<double>(up) / static_cast<double>(n);
  const double up_hours = static_cast<double>(up) * g;
  s.interruptions_per_hour = up_hours > 0 ? static_cast<double>(s.interruptions) / up_hours : 0.0;
  s.mean_up_hours = up_runs ? up_hours / static_cast<double>(up_runs) : 0.0;
  s.mean_down_hours = down_runs ? static_cast<double>(n - up) * g / static_cast<double>(down_runs) : 0.0;
  return s;
}

}  // namespace jobctl::scheduler
