#include "cloud/exec_provider.h"

#include "base/fixed_decimal.h"
#include "cloud/command_template.h"
#include "cloud/instance_json.h"
#include "process/run.h"

namespace jobctl::cloud {

using nlohmann::json;

namespace {

Placeholders launch_values(const LaunchRequest& r) {
  const double price = r.spot && r.offer.spot_usd_per_hour ? *r.offer.spot_usd_per_hour
                                                          : r.offer.on_demand_usd_per_hour;
  return Placeholders{{"instance_type", r.offer.instance_type},
                      {"spot", r.spot ? "true" : "false"},
                      {"market", r.spot ? "spot" : "on-demand"},
                      {"region", r.offer.region},
                      {"zone", r.offer.zone},
                      {"cloud", r.offer.cloud},
                      {"usd_per_hour", fixed_decimal(price, 4)},
                      {"server", r.server_url},
                      {"tag", r.tag},
                      {"name", r.name}};
}

Expected<std::string> worker_command_for(const std::string& tmpl, const LaunchRequest& r) {
  Placeholders v{{"server", r.server_url}, {"instance_type", r.offer.instance_type},
                 {"tag", r.tag}};
  Placeholders raw{{"spot_flag", r.spot ? " --spot" : ""}, {"job_flags", job_flags(r.for_job, r.worker_flags)}};
  return expand_command(tmpl, v, "cloud.exec.worker_command", raw);
}

}  // namespace

ExecProvider::ExecProvider(ExecProviderOptions options) : options_(std::move(options)) {}

Status ExecProvider::validate(const ExecProviderOptions& o) {
  for (auto [key, value] : {std::pair{"cloud.exec.launch", &o.launch},
                            std::pair{"cloud.exec.terminate", &o.terminate},
                            std::pair{"cloud.exec.describe", &o.describe}})
    if (value->empty())
      return make_error(ErrorCode::invalid_argument, std::string(key) + " is required when cloud.provider is exec", key);
  if (o.timeout_s < 1 || o.timeout_s > 3600)
    return make_error(ErrorCode::invalid_argument, "cloud.exec.timeout_s must be between 1 and 3600", "cloud.exec.timeout_s");
  // Expand each template once with sample values: unknown placeholders fail now, not at 3 a.m.
  LaunchRequest sample;
  sample.offer.instance_type = "t";
  ExecProvider p(o);
  if (auto c = p.launch_command(sample); !c) return c.error();
  if (auto c = expand_command(o.terminate, {{"instance_id", "i"}, {"tag", "t"}}, "cloud.exec.terminate"); !c)
    return c.error();
  if (auto c = expand_command(o.describe, {{"tag", "t"}}, "cloud.exec.describe"); !c) return c.error();
  if (!o.interruptions.empty())
    if (auto c = expand_command(o.interruptions, {{"tag", "t"}, {"since_ms", "0"}}, "cloud.exec.interruptions"); !c)
      return c.error();
  return {};
}

Expected<std::vector<cost::Offer>> ExecProvider::list_offers() { return options_.offers; }

Expected<std::string> ExecProvider::launch_command(const LaunchRequest& request) const {
  auto worker = worker_command_for(options_.worker_command, request);
  if (!worker) return worker.error();
  Placeholders values = launch_values(request);
  values["worker_command"] = *worker;
  return expand_command(options_.launch, values, "cloud.exec.launch");
}

Expected<process::RunResult> ExecProvider::run_command(const std::string& command) const {
  return process::run(process::shell_argv(command), {.timeout = std::chrono::seconds(options_.timeout_s)});
}

Expected<json> ExecProvider::run_json(const std::string& key, const std::string& command) const {
  auto r = run_command(command);
  if (!r) return r.error();
  if (!r->success())
    return make_error(r->timed_out ? ErrorCode::timeout : ErrorCode::unavailable,
                      key + " failed (" + r->describe() + ")", key);
  json j = json::parse(r->out, nullptr, false);
  if (j.is_discarded()) {
    std::string head = r->out.substr(0, 200);
    return make_error(ErrorCode::io, key + " printed no valid JSON on stdout (got '" + head + "')", key);
  }
  return j;
}

Expected<Instance> ExecProvider::launch(const LaunchRequest& request) {
  auto cmd = launch_command(request);
  if (!cmd) return cmd.error();
  auto j = run_json("cloud.exec.launch", *cmd);
  if (!j) return j.error();
  const json& one = j->is_array() && j->size() == 1 ? (*j)[0] : *j;
  auto inst = instance_from_json(one, "cloud.exec.launch output");
  if (!inst) return inst.error();
  // Fill what the command did not print from the request.
  if (inst->instance_type.empty()) inst->instance_type = request.offer.instance_type;
  if (inst->region.empty()) inst->region = request.offer.region;
  if (inst->zone.empty()) inst->zone = request.offer.zone;
  if (!one.contains("spot")) inst->spot = request.spot;
  if (inst->usd_per_hour == 0)
    inst->usd_per_hour = request.spot && request.offer.spot_usd_per_hour
                             ? *request.offer.spot_usd_per_hour
                             : request.offer.on_demand_usd_per_hour;
  return inst;
}

Status ExecProvider::terminate(const std::string& instance_id) {
  auto cmd = expand_command(options_.terminate, {{"instance_id", instance_id}, {"tag", ""}},
                            "cloud.exec.terminate");
  if (!cmd) return cmd.error();
  auto r = run_command(*cmd);
  if (!r) return r.error();
  if (!r->success())
    return make_error(r->timed_out ? ErrorCode::timeout : ErrorCode::unavailable,
                      "cloud.exec.terminate failed for " + instance_id + " (" + r->describe() + ")",
                      "cloud.exec.terminate");
  return {};
}

Expected<std::vector<Instance>> ExecProvider::describe(const std::string& tag) {
  auto cmd = expand_command(options_.describe, {{"tag", tag}}, "cloud.exec.describe");
  if (!cmd) return cmd.error();
  auto j = run_json("cloud.exec.describe", *cmd);
  if (!j) return j.error();
  return instances_from_json(*j, "cloud.exec.describe output");
}

Expected<std::vector<InterruptionNotice>> ExecProvider::interruptions(const std::string& tag,
                                                                      int64_t since_ms) {
  std::vector<InterruptionNotice> out;
  if (options_.interruptions.empty()) {
    auto all = describe(tag);
    if (!all) return all.error();
    for (const auto& i : *all)
      if (i.notice_ms && *i.notice_ms >= since_ms)
        out.push_back({i.id, *i.notice_ms, i.action_ms.value_or(*i.notice_ms), i.reason});
    return out;
  }
  auto cmd = expand_command(options_.interruptions,
                            {{"tag", tag}, {"since_ms", std::to_string(since_ms)}},
                            "cloud.exec.interruptions");
  if (!cmd) return cmd.error();
  auto j = run_json("cloud.exec.interruptions", *cmd);
  if (!j) return j.error();
  const json* list = &*j;
  if (j->is_object() && j->contains("interruptions")) list = &(*j)["interruptions"];
  if (!list->is_array())
    return make_error(ErrorCode::invalid_argument, "cloud.exec.interruptions output must be a JSON array",
                      "cloud.exec.interruptions");
  for (size_t i = 0; i < list->size(); ++i) {
    auto n = notice_from_json((*list)[i], "cloud.exec.interruptions output[" + std::to_string(i) + "]");
    if (!n) return n.error();
    out.push_back(std::move(*n));
  }
  return out;
}

}  // namespace jobctl::cloud
