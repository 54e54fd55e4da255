#include "protocol/worker_messages.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "net/json_body.h"

namespace jobctl::protocol {

using nlohmann::json;

namespace {

// An object member's text, or an error naming it ("" when absent and not required).
Expected<std::string> object_text(const json& body, const char* key, bool required) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    if (required) return make_error(ErrorCode::invalid_argument, std::string(key) + " is required", key);
    return std::string();
  }
  if (!it->is_object()) return make_error(ErrorCode::invalid_argument, std::string(key) + " must be an object", key);
  return it->dump();
}

// A JSON object's text as a value to embed (text that does not parse travels as a string).
json embedded(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

json with_lease(const LeaseRef& lease, json fields) {
  fields["worker_id"] = lease.worker_id;
  fields["epoch"] = lease.epoch;
  return fields;
}

// A required integer member of an answer.
Expected<int64_t> answer_int(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_number_integer())
    return make_error(ErrorCode::invalid_argument, std::string("the answer's ") + key + " is not an integer", key);
  return it->get<int64_t>();
}

}  // namespace

Expected<LeaseRef> lease_ref_from_json(const json& body) {
  auto worker = net::int_field(body, "worker_id", 1);
  if (!worker) return worker.error();
  auto epoch = net::int_field(body, "epoch", 1);
  if (!epoch) return epoch.error();
  return LeaseRef{*worker, *epoch};
}

namespace {

// A report's keys checked against the ones it may carry, and the lease it acts under read.
Expected<LeaseRef> report_lease(const json& body, std::initializer_list<std::string_view> keys) {
  if (auto st = net::only_keys(body, keys); !st) return st.error();
  return lease_ref_from_json(body);
}

}  // namespace

json to_json(const LeaseRef& m) { return {{"worker_id", m.worker_id}, {"epoch", m.epoch}}; }

json to_json(const WorkerRegistered& m) {
  return {{"worker_id", m.worker_id},
          {"worker_secret", m.worker_secret},
          {"heartbeat_interval_s", m.heartbeat_interval_s},
          {"lease_timeout_s", m.lease_timeout_s},
          {"max_lease_wait_s", m.max_lease_wait_s},
          {"warnings", m.warnings}};
}

json to_json(const LeaseOffer& m) {
  json resume = nullptr;
  if (m.resume) {
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", m.resume->crc32c);
    resume = {{"step", m.resume->step}, {"bytes", m.resume->bytes}, {"crc32c", crc}};
  }
  json out = {{"job_id", m.job_id},
              {"epoch", m.epoch},
              {"name", m.name},
              {"spec", embedded(m.spec_json)},
              {"lease_expires_ms", m.lease_expires_ms},
              {"resume", std::move(resume)},
              {"gpus", m.gpus},
              {"owner", m.owner}};
  if (m.registry_credential)
    out["registry_credential"] = {{"registry", m.registry_credential->registry},
                                  {"username", m.registry_credential->username},
                                  {"password", m.registry_credential->password}};
  if (m.gang)
    out["gang"] = {{"rank", m.gang->rank},
                   {"nodes", m.gang->nodes},
                   {"addrs", m.gang->addrs},
                   {"master_addr", m.gang->master_addr},
                   {"master_port", m.gang->master_port},
                   {"gpus_per_node", m.gang->gpus_per_node}};
  return out;
}

json to_json(const HeartbeatReport& m) {
  json j = to_json(m.lease);
  if (m.progress_json) j["progress"] = embedded(*m.progress_json);
  if (!m.log.empty()) {
    json lines = json::array();
    for (const OutputLine& l : m.log) lines.push_back({{"time_ms", l.time_ms}, {"text", l.text}});
    j["log"] = std::move(lines);
  }
  return j;
}

json to_json(const HeartbeatReply& m) {
  return {{"cancel", m.cancel}, {"move", m.move}, {"lease_expires_ms", m.lease_expires_ms}};
}

json to_json(const CompletionReport& m) { return with_lease(m.lease, {{"result", embedded(m.result_json)}}); }

json to_json(const FailureReport& m) { return with_lease(m.lease, {{"error", m.error}}); }

json to_json(const PreemptionReport& m) { return with_lease(m.lease, {{"reason", m.reason}}); }

json to_json(const ImageReport& m) { return with_lease(m.lease, {{"image", m.image}, {"digest", m.digest}}); }

json to_json(const CheckpointRejection& m) {
  return with_lease(m.lease, {{"error", m.error.substr(0, kMaxRejectionBytes)},
                              {"fallback_step", m.fallback_step ? json(*m.fallback_step) : json(nullptr)}});
}

Expected<HeartbeatReport> heartbeat_report_from_json(const json& body, size_t max_log_bytes) {
  if (auto st = net::only_keys(body, {"worker_id", "epoch", "progress", "log"}); !st) return st.error();
  HeartbeatReport hb;
  if (auto it = body.find("log"); it != body.end()) {
    size_t bytes = 0;
    if (it->is_string()) {
      bytes = it->get_ref<const std::string&>().size();
      hb.log.push_back(OutputLine{0, it->get<std::string>()});
    } else if (it->is_array()) {
      for (const json& l : *it) {
        const auto time = l.is_object() ? l.find("time_ms") : l.end();
        const auto text = l.is_object() ? l.find("text") : l.end();
        if (!l.is_object() || l.size() != 2 || time == l.end() || !time->is_number_integer() ||
            time->get<int64_t>() < 0 || text == l.end() || !text->is_string())
          return make_error(ErrorCode::invalid_argument,
                            "log must be an array of {\"time_ms\": ms since the epoch, \"text\": a line}", "log");
        bytes += text->get_ref<const std::string&>().size();
        hb.log.push_back(OutputLine{time->get<int64_t>(), text->get<std::string>()});
      }
    } else {
      return make_error(ErrorCode::invalid_argument, "log must be an array of lines", "log");
    }
    if (bytes > max_log_bytes)
      return make_error(ErrorCode::payload_too_large,
                        "log is " + std::to_string(bytes) + " bytes, more than the " +
                            std::to_string(max_log_bytes) + " a heartbeat may carry",
                        "log");
  }
  auto lease = lease_ref_from_json(body);
  if (!lease) return lease.error();
  hb.lease = *lease;
  auto progress = object_text(body, "progress", false);
  if (!progress) return progress.error();
  if (!progress->empty()) hb.progress_json = std::move(*progress);
  return hb;
}

Expected<CompletionReport> completion_report_from_json(const json& body) {
  CompletionReport rep;
  auto lease = report_lease(body, {"worker_id", "epoch", "result"});
  if (!lease) return lease.error();
  rep.lease = *lease;
  auto result = object_text(body, "result", true);
  if (!result) return result.error();
  const json& r = body["result"];
  for (const char* k : {"final_loss", "test_accuracy", "test_loss", "elapsed_s"})
    if (r.contains(k) && !r[k].is_number() && !r[k].is_null())
      return make_error(ErrorCode::invalid_argument, std::string("result.") + k + " must be a number",
                        std::string("result.") + k);
  rep.result_json = std::move(*result);
  return rep;
}

Expected<FailureReport> failure_report_from_json(const json& body) {
  FailureReport rep;
  auto lease = report_lease(body, {"worker_id", "epoch", "error"});
  if (!lease) return lease.error();
  rep.lease = *lease;
  auto error = net::string_field(body, "error", kMaxFailureBytes);
  if (!error) return error.error();
  rep.error = std::move(*error);
  return rep;
}

Expected<PreemptionReport> preemption_report_from_json(const json& body) {
  PreemptionReport rep;
  auto lease = report_lease(body, {"worker_id", "epoch", "reason"});
  if (!lease) return lease.error();
  rep.lease = *lease;
  auto reason = net::string_field(body, "reason", kMaxReasonBytes, std::string("worker released the job"));
  if (!reason) return reason.error();
  rep.reason = std::move(*reason);
  return rep;
}

Expected<CheckpointRejection> checkpoint_rejection_from_json(const json& body) {
  CheckpointRejection rep;
  auto lease = report_lease(body, {"worker_id", "epoch", "error", "fallback_step"});
  if (!lease) return lease.error();
  rep.lease = *lease;
  auto error = net::string_field(body, "error", kMaxRejectionBytes);
  if (!error) return error.error();
  rep.error = std::move(*error);
  if (auto it = body.find("fallback_step"); it != body.end() && !it->is_null()) {
    auto fallback = net::int_field(body, "fallback_step", 0);
    if (!fallback) return fallback.error();
    rep.fallback_step = *fallback;
  }
  return rep;
}

Expected<ImageReport> image_report_from_json(const json& body) {
  ImageReport rep;
  auto lease = report_lease(body, {"worker_id", "epoch", "image", "digest"});
  if (!lease) return lease.error();
  rep.lease = *lease;
  auto image = net::string_field(body, "image", 512);
  if (!image) return image.error();
  rep.image = std::move(*image);
  auto digest = net::string_field(body, "digest", 71);
  if (!digest) return digest.error();
  const bool hex = digest->size() == 71 && digest->compare(0, 7, "sha256:") == 0 &&
                   digest->find_first_not_of("0123456789abcdef", 7) == std::string::npos;
  if (!hex) return make_error(ErrorCode::invalid_argument, "digest must be sha256: and 64 lowercase hex digits", "digest");
  rep.digest = std::move(*digest);
  return rep;
}

Expected<WorkerRegistered> worker_registered_from_json(const json& body) {
  WorkerRegistered m;
  auto id = answer_int(body, "worker_id");
  if (!id) return id.error();
  m.worker_id = *id;
  auto secret = body.find("worker_secret");
  if (secret == body.end() || !secret->is_string())
    return make_error(ErrorCode::invalid_argument,
                      "the registration answer has no worker_secret (an older jobctld?)", "worker_secret");
  m.worker_secret = secret->get<std::string>();
  m.heartbeat_interval_s = body.value("heartbeat_interval_s", m.heartbeat_interval_s);
  m.lease_timeout_s = body.value("lease_timeout_s", m.lease_timeout_s);
  m.max_lease_wait_s = body.value("max_lease_wait_s", m.max_lease_wait_s);
  if (auto w = body.find("warnings"); w != body.end() && w->is_array())
    for (const auto& line : *w)
      if (line.is_string()) m.warnings.push_back(line.get<std::string>());
  return m;
}

Expected<ResumePoint> resume_point_from_json(const json& body) {
  ResumePoint p;
  auto step = answer_int(body, "step");
  if (!step) return step.error();
  p.step = *step;
  auto bytes = answer_int(body, "bytes");
  if (!bytes) return bytes.error();
  p.bytes = *bytes;
  auto crc = body.find("crc32c");
  const bool hex = crc != body.end() && crc->is_string() && crc->get_ref<const std::string&>().size() == 8 &&
                   crc->get_ref<const std::string&>().find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (!hex) return make_error(ErrorCode::invalid_argument, "the answer's crc32c is not 8 hex digits", "crc32c");
  p.crc32c = static_cast<uint32_t>(std::strtoul(crc->get_ref<const std::string&>().c_str(), nullptr, 16));
  return p;
}

Expected<LeaseOffer> lease_offer_from_json(const json& body) {
  LeaseOffer m;
  auto job = answer_int(body, "job_id");
  if (!job) return job.error();
  m.job_id = *job;
  auto epoch = answer_int(body, "epoch");
  if (!epoch) return epoch.error();
  m.epoch = *epoch;
  m.name = body.value("name", std::string());
  if (auto spec = body.find("spec"); spec != body.end() && spec->is_object()) m.spec_json = spec->dump();
  m.lease_expires_ms = body.value("lease_expires_ms", int64_t{0});
  if (auto r = body.find("resume"); r != body.end() && r->is_object()) {
    auto resume = resume_point_from_json(*r);
    if (!resume) return resume.error();
    m.resume = *resume;
  }
  if (auto g = body.find("gpus"); g != body.end() && g->is_array())
    for (const auto& k : *g)
      if (k.is_number_integer()) m.gpus.push_back(k.get<int>());
  if (auto g = body.find("gang"); g != body.end() && g->is_object()) {
    GangRendezvous gang;
    auto rank = answer_int(*g, "rank");
    if (!rank) return rank.error();
    auto nodes = answer_int(*g, "nodes");
    if (!nodes) return nodes.error();
    // (Read as typed fields: a mistyped one is an error, never an exception.)
    auto master_port = answer_int(*g, "master_port");
    if (!master_port) return master_port.error();
    auto gpus_per_node = answer_int(*g, "gpus_per_node");
    if (!gpus_per_node) return gpus_per_node.error();
    auto master_addr = g->find("master_addr");
    if (master_addr == g->end() || !master_addr->is_string())
      return make_error(ErrorCode::invalid_argument, "the answer's master_addr is not a string", "master_addr");
    gang.rank = static_cast<int>(*rank);
    gang.nodes = static_cast<int>(*nodes);
    gang.master_addr = master_addr->get<std::string>();
    gang.master_port = static_cast<int>(*master_port);
    gang.gpus_per_node = static_cast<int>(*gpus_per_node);
    if (auto a = g->find("addrs"); a != g->end() && a->is_array())
      for (const auto& addr : *a)
        if (addr.is_string()) gang.addrs.push_back(addr.get<std::string>());
    if (*rank < 0 || *nodes < 1 || *rank >= *nodes || *nodes > 65536 ||
        gang.addrs.size() != static_cast<size_t>(*nodes))
      return make_error(ErrorCode::invalid_argument, "the lease's gang is inconsistent (rank, nodes, addrs)", "gang");
    m.gang = std::move(gang);
  }
  if (auto o = body.find("owner"); o != body.end()) {
    if (!o->is_string()) return make_error(ErrorCode::invalid_argument, "the lease's owner is not a string", "owner");
    m.owner = o->get<std::string>();
  }
  if (auto c = body.find("registry_credential"); c != body.end() && c->is_object()) {
    RegistryCredential cred;
    for (auto [key, out] : {std::pair{"registry", &cred.registry}, {"username", &cred.username}, {"password", &cred.password}}) {
      auto it = c->find(key);
      if (it == c->end() || !it->is_string())
        return make_error(ErrorCode::invalid_argument, std::string("the lease's registry_credential has no ") + key,
                          "registry_credential");
      *out = it->get<std::string>();
    }
    m.registry_credential = std::move(cred);
  }
  return m;
}

Expected<HeartbeatReply> heartbeat_reply_from_json(const json& body) {
  if (!body.is_object()) return make_error(ErrorCode::invalid_argument, "the heartbeat answer is not an object");
  HeartbeatReply m;
  m.cancel = body.value("cancel", false);
  m.move = body.value("move", false);
  m.lease_expires_ms = body.value("lease_expires_ms", int64_t{0});
  return m;
}

}  // namespace jobctl::protocol
