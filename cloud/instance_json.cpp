#include "cloud/instance_json.h"

#include "base/utc_time.h"

namespace jobctl::cloud {

using nlohmann::json;

namespace {

Error bad(const std::string& field, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, field + " " + what, field);
}

Status read_string(const json& j, const char* key, const std::string& prefix, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) return bad(prefix + "." + key, "must be a string");
  out = it->get<std::string>();
  return {};
}

// A time: milliseconds since the epoch, or RFC 3339 text (what a cloud CLI prints, e.g. EC2's
// LaunchTime "2026-11-27T02:40:10+00:00").
Status read_ms(const json& j, const char* key, const std::string& prefix, std::optional<int64_t>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (it->is_string()) {
    out = parse_rfc3339(it->get<std::string>());
    if (!out) return bad(prefix + "." + key, "must be milliseconds or an RFC 3339 time");
    return {};
  }
  if (!it->is_number_integer()) return bad(prefix + "." + key, "must be milliseconds or an RFC 3339 time");
  out = it->get<int64_t>();
  return {};
}

}  // namespace

json to_json(const Instance& i) {
  json j{{"id", i.id},
         {"instance_type", i.instance_type},
         {"region", i.region},
         {"zone", i.zone},
         {"spot", i.spot},
         {"state", i.state},
         {"launched_ms", i.launched_ms},
         {"ended_ms", i.ended_ms ? json(*i.ended_ms) : json(nullptr)},
         {"usd_per_hour", i.usd_per_hour},
         {"notice_ms", i.notice_ms ? json(*i.notice_ms) : json(nullptr)},
         {"action_ms", i.action_ms ? json(*i.action_ms) : json(nullptr)},
         {"reason", i.reason}};
  return j;
}

json to_json(const InterruptionNotice& n) {
  return json{{"instance_id", n.instance_id},
              {"notice_ms", n.notice_ms},
              {"action_ms", n.action_ms},
              {"reason", n.reason}};
}

Expected<Instance> instance_from_json(const json& j, const std::string& prefix) {
  if (!j.is_object()) return bad(prefix, "must be an object");
  Instance out;
  auto id = j.find("id");
  if (id == j.end() || !id->is_string() || id->get<std::string>().empty())
    return bad(prefix + ".id", "is required and must be a non-empty string");
  out.id = id->get<std::string>();
  Status st;
  if (st = read_string(j, "instance_type", prefix, out.instance_type); !st) return st.error();
  if (st = read_string(j, "region", prefix, out.region); !st) return st.error();
  if (st = read_string(j, "zone", prefix, out.zone); !st) return st.error();
  if (st = read_string(j, "state", prefix, out.state); !st) return st.error();
  if (out.state.empty()) out.state = "running";
  if (st = read_string(j, "reason", prefix, out.reason); !st) return st.error();
  if (auto it = j.find("spot"); it != j.end() && !it->is_null()) {
    if (it->is_boolean()) out.spot = it->get<bool>();
    else if (it->is_string()) out.spot = it->get<std::string>() == "spot";
    else return bad(prefix + ".spot", "must be a boolean or \"spot\"");
  }
  std::optional<int64_t> launched;
  if (st = read_ms(j, "launched_ms", prefix, launched); !st) return st.error();
  out.launched_ms = launched.value_or(0);
  if (st = read_ms(j, "ended_ms", prefix, out.ended_ms); !st) return st.error();
  if (st = read_ms(j, "notice_ms", prefix, out.notice_ms); !st) return st.error();
  if (st = read_ms(j, "action_ms", prefix, out.action_ms); !st) return st.error();
  if (auto it = j.find("usd_per_hour"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() < 0)
      return bad(prefix + ".usd_per_hour", "must be a number >= 0");
    out.usd_per_hour = it->get<double>();
  }
  return out;
}

Expected<InterruptionNotice> notice_from_json(const json& j, const std::string& prefix) {
  if (!j.is_object()) return bad(prefix, "must be an object");
  InterruptionNotice n;
  auto id = j.find("instance_id");
  if (id == j.end() || !id->is_string() || id->get<std::string>().empty())
    return bad(prefix + ".instance_id", "is required and must be a non-empty string");
  n.instance_id = id->get<std::string>();
  std::optional<int64_t> notice, action;
  Status st;
  if (st = read_ms(j, "notice_ms", prefix, notice); !st) return st.error();
  if (st = read_ms(j, "action_ms", prefix, action); !st) return st.error();
  if (!notice) return bad(prefix + ".notice_ms", "is required");
  n.notice_ms = *notice;
  n.action_ms = action.value_or(*notice);
  if (st = read_string(j, "reason", prefix, n.reason); !st) return st.error();
  return n;
}

Expected<std::vector<Instance>> instances_from_json(const json& j, const std::string& prefix) {
  const json* list = &j;
  std::string field = prefix;
  if (j.is_object()) {
    auto it = j.find("instances");
    if (it == j.end()) return bad(prefix + ".instances", "is required");
    list = &*it;
    field = prefix + ".instances";
  }
  if (!list->is_array()) return bad(field, "must be an array");
  std::vector<Instance> out;
  for (size_t i = 0; i < list->size(); ++i) {
    auto inst = instance_from_json((*list)[i], field + "[" + std::to_string(i) + "]");
    if (!inst) return inst.error();
    out.push_back(std::move(*inst));
  }
  return out;
}

std::string rfc3339_utc(int64_t ms) { return format_utc(ms, UtcStyle::rfc3339); }

json offer_to_json(const cost::Offer& o) {
  return json{{"cloud", o.cloud},
              {"instance_type", o.instance_type},
              {"region", o.region},
              {"zone", o.zone},
              {"gpu", o.gpu_model},
              {"gpus", o.gpu_count},
              {"gpu_memory_gb", o.gpu_memory_gb},
              {"vcpus", o.vcpus},
              {"memory_gb", o.memory_gb},
              {"on_demand_usd_per_hour", o.on_demand_usd_per_hour},
              {"spot_usd_per_hour", o.spot_usd_per_hour ? json(*o.spot_usd_per_hour) : json(nullptr)},
              {"source", o.source},
              {"date", o.date}};
}

Expected<cost::Offer> offer_from_json(const json& j, const std::string& prefix) {
  if (!j.is_object()) return make_error(ErrorCode::invalid_argument, prefix + " must be an object", prefix);
  cost::Offer o;
  try {
    o.cloud = j.value("cloud", "");
    o.instance_type = j.at("instance_type").get<std::string>();
    o.region = j.value("region", "");
    o.zone = j.value("zone", "");
    o.gpu_model = j.value("gpu", "");
    o.gpu_count = j.value("gpus", 0);
    o.gpu_memory_gb = j.value("gpu_memory_gb", 0.0);
    o.vcpus = j.value("vcpus", 0.0);
    o.memory_gb = j.value("memory_gb", 0.0);
    o.on_demand_usd_per_hour = j.at("on_demand_usd_per_hour").get<double>();
    if (auto it = j.find("spot_usd_per_hour"); it != j.end() && !it->is_null())
      o.spot_usd_per_hour = it->get<double>();
    o.source = j.value("source", "");
    o.date = j.value("date", "");
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_argument, prefix + ": " + e.what(), prefix);
  }
  return o;
}

}  // namespace jobctl::cloud
