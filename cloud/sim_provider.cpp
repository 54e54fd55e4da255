#include "cloud/sim_provider.h"

#include "client/api_client.h"
#include "cloud/instance_json.h"

namespace jobctl::cloud {

using nlohmann::json;


namespace {

client::HttpClientOptions http_options(long timeout_ms) {
  client::HttpClientOptions o;
  o.connect_timeout_ms = 2000;
  o.timeout_ms = timeout_ms;
  return o;
}

}  // namespace

SimProvider::SimProvider(SimProviderOptions options)
    : options_(std::move(options)), http_(options_.url, http_options(options_.timeout_ms)) {}

Expected<json> SimProvider::call(std::string_view method, const std::string& path,
                                 const std::string& body) {
  auto r = http_.request(method, path, body);
  if (!r) return r.error();
  return client::json_from_response(*r);
}

Expected<std::vector<cost::Offer>> SimProvider::list_offers() {
  auto j = call("GET", "/offers");
  if (!j) return j.error();
  if (!j->contains("offers") || !(*j)["offers"].is_array())
    return make_error(ErrorCode::io, "cloudsim's /offers answer has no offers array");
  std::vector<cost::Offer> out;
  for (size_t i = 0; i < (*j)["offers"].size(); ++i) {
    auto o = offer_from_json((*j)["offers"][i], "offers[" + std::to_string(i) + "]");
    if (!o) return o.error();
    out.push_back(std::move(*o));
  }
  return out;
}

Expected<Instance> SimProvider::launch(const LaunchRequest& r) {
  json body{{"instance_type", r.offer.instance_type},
            {"spot", r.spot},
            {"server", r.server_url},
            {"tag", r.tag},
            {"name", r.name}};
  if (!r.offer.region.empty()) body["region"] = r.offer.region;
  if (!r.offer.zone.empty()) body["zone"] = r.offer.zone;
  if (r.for_job > 0) body["for_job"] = r.for_job;
  if (!r.worker_flags.empty()) body["worker_flags"] = r.worker_flags;
  auto j = call("POST", "/instances", body.dump());
  if (!j) return j.error();
  return instance_from_json(*j, "cloudsim launch answer");
}

Status SimProvider::terminate(const std::string& id) {
  auto j = call("POST", "/instances/" + client::url_encode(id) + "/terminate", "{}");
  if (!j && j.error().code != ErrorCode::not_found) return j.error();
  return {};
}

Expected<std::vector<Instance>> SimProvider::describe(const std::string& tag) {
  auto j = call("GET", "/instances?tag=" + client::url_encode(tag));
  if (!j) return j.error();
  return instances_from_json(*j, "cloudsim instances answer");
}

Expected<std::vector<InterruptionNotice>> SimProvider::interruptions(const std::string& tag,
                                                                     int64_t since_ms) {
  auto j = call("GET", "/interruptions?tag=" + client::url_encode(tag) +
                           "&since_ms=" + std::to_string(since_ms));
  if (!j) return j.error();
  std::vector<InterruptionNotice> out;
  const json& list = (*j)["interruptions"];
  if (!list.is_array()) return make_error(ErrorCode::io, "cloudsim's /interruptions answer has no array");
  for (size_t i = 0; i < list.size(); ++i) {
    auto n = notice_from_json(list[i], "interruptions[" + std::to_string(i) + "]");
    if (!n) return n.error();
    out.push_back(std::move(*n));
  }
  return out;
}

Expected<json> SimProvider::billing() { return call("GET", "/billing"); }

}  // namespace jobctl::cloud
