#include "cloud/sim/sim_cloud.h"

#include <signal.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/text_file.h"
#include "cloud/command_template.h"
#include "cloud/instance_json.h"

namespace jobctl::cloud::sim {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The standard worker flags, appended to a --worker-command that names no placeholder.
constexpr const char* kWorkerFlags =
    " --server {server} --name {name} --notice-url {notice_url} --instance-id {instance_id}"
    " --instance-type {instance_type}{spot_flag}{job_flags} --work-dir {work_dir}";

Error not_found(const std::string& id) {
  return make_error(ErrorCode::not_found, "no instance " + id, "id");
}

}  // namespace

SimCloud::SimCloud(SimCloudOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      start_ms_(clock.now_ms()),
      interruption_rng_(options_.seed),
      id_rng_(options_.seed ^ static_cast<uint64_t>(clock.now_ms()) ^ 0x9e3779b97f4a7c15ULL) {}

Expected<std::unique_ptr<SimCloud>> SimCloud::create(SimCloudOptions o, const Clock& clock) {
  if (!(o.time_factor > 0) || !std::isfinite(o.time_factor))
    return make_error(ErrorCode::invalid_argument, "time factor must be > 0", "time_factor");
  if (!(o.notice_seconds >= 0))
    return make_error(ErrorCode::invalid_argument, "notice seconds must be >= 0", "notice_seconds");
  if (!(o.interruption_rate_per_hour >= 0))
    return make_error(ErrorCode::invalid_argument, "the interruption rate must be >= 0", "interruption_rate_per_hour");
  if (o.state_dir.empty()) return make_error(ErrorCode::invalid_argument, "a state directory is required", "state_dir");
  if (o.worker_command.empty())
    return make_error(ErrorCode::invalid_argument, "a worker command is required", "worker_command");
  if (o.offers.empty()) return make_error(ErrorCode::invalid_argument, "the catalog has no offers", "catalog");
  std::error_code ec;
  fs::create_directories(fs::path(o.state_dir) / "instances", ec);
  if (ec) return make_error(ErrorCode::io, "cannot create " + o.state_dir + ": " + ec.message(), "state_dir");
  std::unique_ptr<SimCloud> c(new SimCloud(std::move(o), clock));
  if (auto st = c->load_state(); !st) return st.error();
  return c;
}

SimCloud::~SimCloud() {
  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  for (auto& inst : instances_)
    if (!inst->ended_ms) end_locked(*inst, now, "cloudsim-stopped");
  for (auto& inst : instances_)
    if (inst->process) inst->process->kill();
  save_locked();
}

void SimCloud::set_base_url(std::string url) {
  MutexLock lock(mu_);
  options_.base_url = std::move(url);
}

int64_t SimCloud::real_ms(double sim_seconds) const {
  return static_cast<int64_t>(std::llround(sim_seconds * 1000.0 / options_.time_factor));
}

double SimCloud::sim_seconds_now() const {
  return static_cast<double>(clock_.now_ms() - start_ms_) / 1000.0 * options_.time_factor;
}

int64_t SimCloud::billed_seconds(const Inst& inst, int64_t now) const {
  const int64_t end = inst.ended_ms.value_or(now);
  const double sim_ms = static_cast<double>(std::max<int64_t>(0, end - inst.info.launched_ms)) *
                        options_.time_factor;
  return static_cast<int64_t>(std::ceil(sim_ms / 1000.0 - 1e-9));
}

bool SimCloud::trace_available_locked(int64_t now) const {
  if (!options_.trace) return true;
  const auto& t = *options_.trace;
  const double sim_s = static_cast<double>(now - start_ms_) / 1000.0 * options_.time_factor;
  const int64_t n = static_cast<int64_t>(t.available.size());
  int64_t tick = options_.trace_start_tick + static_cast<int64_t>(std::floor(sim_s / t.gap_seconds));
  tick = ((tick % n) + n) % n;
  return t.available[static_cast<size_t>(tick)] > 0;
}

bool SimCloud::spot_capacity_now() {
  MutexLock lock(mu_);
  return trace_available_locked(clock_.now_ms());
}

std::string SimCloud::new_id_locked() {
  for (;;) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "i-%017llx",
                  static_cast<unsigned long long>(id_rng_() & 0x1ffffffffffffffULL));
    if (!by_id_.count(buf)) return buf;
  }
}

json SimCloud::instance_json_locked(Inst& inst, int64_t now) {
  json j = to_json(inst.info);
  const int64_t secs = billed_seconds(inst, now);
  j["tag"] = inst.tag;
  j["name"] = inst.name;
  j["server"] = inst.server;
  j["ended_ms"] = inst.ended_ms ? json(*inst.ended_ms) : json(nullptr);
  j["billed_seconds"] = secs;
  j["usd"] = static_cast<double>(secs) * inst.info.usd_per_hour / 3600.0;
  j["pid"] = inst.process ? json(inst.process->pid()) : json(nullptr);
  j["worker"] = inst.worker_status;
  j["log"] = inst.dir.empty() ? json(nullptr) : json(inst.dir + "/worker.log");
  j["notice_url"] = options_.base_url + "/instances/" + inst.info.id +
                    "/latest/meta-data/spot/instance-action";
  return j;
}

Expected<json> SimCloud::launch(const SimLaunch& r) {
  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  if (r.instance_type.empty())
    return make_error(ErrorCode::invalid_argument, "instance_type is required", "instance_type");
  const cost::Offer* offer = nullptr;
  bool type_known = false;
  bool in_region = false;
  for (const auto& o : options_.offers) {
    if (o.instance_type != r.instance_type) continue;
    type_known = true;
    if (!r.region.empty() && o.region != r.region) continue;
    in_region = true;
    // An instance starts in the zone it was asked for, whose price it is billed at.
    if (r.zone.empty() || o.zone == r.zone) {
      offer = &o;
      break;
    }
  }
  if (!type_known)
    return make_error(ErrorCode::invalid_argument, "no offer of instance type " + r.instance_type +
                                              " in cloudsim's catalog", "instance_type");
  if (!in_region)
    return make_error(ErrorCode::invalid_argument, "instance type " + r.instance_type +
                                              " is not offered in region " + r.region, "region");
  if (offer == nullptr)
    return make_error(ErrorCode::invalid_argument, "instance type " + r.instance_type +
                                              " is not offered in zone " + r.zone, "zone");
  if (r.spot && !offer->spot_usd_per_hour)
    return make_error(ErrorCode::invalid_argument, offer->name() + " has no spot market", "spot");
  if (r.spot && !trace_available_locked(now))
    return make_error(ErrorCode::unavailable, "no spot capacity for " + offer->name() +
                                         " now (the replayed trace shows none)", "spot");
  const std::string server = r.server.empty() ? options_.default_server : r.server;
  if (server.empty())
    return make_error(ErrorCode::invalid_argument, "server (the jobctld URL for the worker) is required", "server");

  auto inst = std::make_unique<Inst>();
  inst->info.id = new_id_locked();
  inst->info.instance_type = offer->instance_type;
  inst->info.region = offer->region;
  inst->info.zone = offer->zone;
  inst->info.spot = r.spot;
  inst->info.state = "running";
  inst->info.launched_ms = now;
  inst->info.usd_per_hour = r.spot ? *offer->spot_usd_per_hour : offer->on_demand_usd_per_hour;
  inst->tag = r.tag;
  inst->name = r.name.empty() ? inst->info.id : r.name;
  inst->server = server;
  inst->dir = (fs::path(options_.state_dir) / "instances" / inst->info.id).string();
  std::error_code ec;
  fs::create_directories(fs::path(inst->dir) / "work", ec);
  if (ec) return make_error(ErrorCode::io, "cannot create " + inst->dir + ": " + ec.message());

  std::string tmpl = options_.worker_command;
  if (!has_placeholders(tmpl)) tmpl += kWorkerFlags;
  const std::string notice_url = options_.base_url + "/instances/" + inst->info.id +
                                 "/latest/meta-data/spot/instance-action";
  auto cmd = expand_command(tmpl,
                            {{"server", server},
                             {"notice_url", notice_url},
                             {"instance_id", inst->info.id},
                             {"instance_type", inst->info.instance_type},
                             {"spot", r.spot ? "true" : "false"},
                             {"region", inst->info.region},
                             {"work_dir", inst->dir + "/work"},
                             {"name", inst->info.id},
                             {"tag", r.tag}},
                            "worker_command", {{"spot_flag", r.spot ? " --spot" : ""}, {"job_flags", job_flags(r.for_job, r.worker_flags)}});
  if (!cmd) return cmd.error();
  {
    std::ofstream log(inst->dir + "/worker.log", std::ios::app);
    log << "cloudsim: " << *cmd << "\n";
  }
  // `exec` makes the worker the shell's process itself: a signal to the instance reaches it.
  const std::string log_path = inst->dir + "/worker.log";
  auto proc = process::Child::spawn(process::shell_argv("exec " + *cmd),
                                    {.cwd = inst->dir,
                                     .stdout_to = process::Output::append_to(log_path),
                                     .stderr_to = process::Output::append_to(log_path)});
  if (!proc) return proc.error();
  inst->process = std::move(*proc);
  inst->worker_status = "running";
  if (r.spot && options_.interruption_rate_per_hour > 0) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double p = 1.0 - u(interruption_rng_);  // (0, 1]
    const double hours = -std::log(p) / options_.interruption_rate_per_hour;
    inst->interrupt_at_ms = now + real_ms(hours * 3600.0);
  }
  Inst& ref = *inst;
  by_id_[ref.info.id] = &ref;
  instances_.push_back(std::move(inst));
  save_locked();
  return instance_json_locked(ref, now);
}

void SimCloud::notice_locked(Inst& inst, int64_t now, const std::string& reason) {
  if (inst.info.notice_ms || inst.ended_ms) return;
  inst.info.notice_ms = now;
  inst.info.action_ms = now + real_ms(options_.notice_seconds);
  inst.info.reason = reason;
  notices_.push_back({inst.info.id, now, *inst.info.action_ms, reason});
}

void SimCloud::end_locked(Inst& inst, int64_t now, const std::string& reason) {
  if (!inst.ended_ms) inst.ended_ms = now;
  inst.info.state = "terminated";
  if (inst.info.reason.empty() || reason == "spot-interruption") inst.info.reason = reason;
  if (inst.process) inst.worker_status = inst.process->kill().describe();
}

Expected<json> SimCloud::terminate(const std::string& id) {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return not_found(id);
  Inst& inst = *it->second;
  const int64_t now = clock_.now_ms();
  if (!inst.ended_ms) {
    inst.ended_ms = now;
    inst.info.reason = "user";
    if (inst.process && !inst.process->try_wait()) {
      inst.info.state = "shutting-down";
      inst.process->signal_group(SIGTERM);
      inst.kill_at_ms = now + options_.terminate_grace_ms;
    } else {
      inst.info.state = "terminated";
    }
    save_locked();
  }
  return instance_json_locked(inst, now);
}

Expected<json> SimCloud::interrupt(const std::string& id, const std::string& reason) {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return not_found(id);
  Inst& inst = *it->second;
  const int64_t now = clock_.now_ms();
  if (inst.ended_ms)
    return make_error(ErrorCode::conflict, "instance " + id + " is " + inst.info.state + "; it cannot be interrupted", "id");
  notice_locked(inst, now, reason);
  save_locked();
  return instance_json_locked(inst, now);
}

Expected<json> SimCloud::describe(const std::string& id) {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return not_found(id);
  return instance_json_locked(*it->second, clock_.now_ms());
}

json SimCloud::list(const std::string& tag) {
  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  json out = json::array();
  for (auto& inst : instances_)
    if (tag.empty() || inst->tag == tag) out.push_back(instance_json_locked(*inst, now));
  return json{{"instances", std::move(out)}};
}

json SimCloud::interruptions(const std::string& tag, int64_t since_ms) {
  MutexLock lock(mu_);
  json out = json::array();
  for (const auto& n : notices_) {
    if (n.notice_ms < since_ms) continue;
    auto it = by_id_.find(n.instance_id);
    if (!tag.empty() && (it == by_id_.end() || it->second->tag != tag)) continue;
    out.push_back(to_json(n));
  }
  return json{{"interruptions", std::move(out)}};
}

Expected<std::optional<json>> SimCloud::instance_action(const std::string& id) {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return not_found(id);
  const Inst& inst = *it->second;
  if (!inst.info.notice_ms) return std::optional<json>{};
  return std::optional<json>(json{{"action", "terminate"}, {"time", rfc3339_utc(*inst.info.action_ms)}});
}

json SimCloud::billing() {
  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  json rows = json::array();
  double total = 0;
  int64_t total_seconds = 0;
  for (auto& inst : instances_) {
    const int64_t secs = billed_seconds(*inst, now);
    const double usd = static_cast<double>(secs) * inst->info.usd_per_hour / 3600.0;
    total += usd;
    total_seconds += secs;
    rows.push_back(json{{"id", inst->info.id},
                        {"instance_type", inst->info.instance_type},
                        {"spot", inst->info.spot},
                        {"tag", inst->tag},
                        {"state", inst->info.state},
                        {"usd_per_hour", inst->info.usd_per_hour},
                        {"launched_ms", inst->info.launched_ms},
                        {"ended_ms", inst->ended_ms ? json(*inst->ended_ms) : json(nullptr)},
                        {"billed_seconds", secs},
                        {"usd", usd}});
  }
  return json{{"instances", std::move(rows)},
              {"billed_seconds", total_seconds},
              {"total_usd", total},
              {"time_factor", options_.time_factor},
              {"sim_seconds", static_cast<double>(now - start_ms_) / 1000.0 * options_.time_factor}};
}

json SimCloud::offers_json() const {
  json out = json::array();
  for (const auto& o : options_.offers) out.push_back(offer_to_json(o));
  return json{{"offers", std::move(out)}};
}

void SimCloud::tick() {
  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  bool changed = false;
  const bool spot_ok = trace_available_locked(now);
  for (auto& p : instances_) {
    Inst& inst = *p;
    if (!inst.ended_ms) {
      if (inst.info.spot && !inst.info.notice_ms) {
        if (inst.interrupt_at_ms && now >= *inst.interrupt_at_ms) {
          notice_locked(inst, now, "spot-interruption (rate)");
          changed = true;
        } else if (!spot_ok) {
          notice_locked(inst, now, "spot-interruption (trace)");
          changed = true;
        }
      }
      if (inst.info.action_ms && now >= *inst.info.action_ms) {
        end_locked(inst, *inst.info.action_ms, "spot-interruption");
        changed = true;
      }
    }
    if (inst.process) {
      if (inst.kill_at_ms && now >= *inst.kill_at_ms) inst.process->kill();
      const auto ended = inst.process->try_wait();
      if (ended && inst.worker_status == "running") {
        inst.worker_status = ended->describe();
        changed = true;
      }
      if (inst.info.state == "shutting-down" && ended) {
        inst.info.state = "terminated";
        changed = true;
      }
    }
  }
  if (changed) save_locked();
}

void SimCloud::save_locked() {
  const int64_t now = clock_.now_ms();
  json all = json::array();
  for (auto& inst : instances_) all.push_back(instance_json_locked(*inst, now));
  json doc{{"saved_ms", now}, {"instances", std::move(all)}};
  const fs::path path = fs::path(options_.state_dir) / "state.json";
  const fs::path tmp = fs::path(options_.state_dir) / "state.json.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(1) << "\n";
    if (!out) return;  // best effort: the live state is in memory
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
}

Status SimCloud::load_state() {
  const fs::path path = fs::path(options_.state_dir) / "state.json";
  if (!fs::exists(path)) return {};  // a first start
  auto text = read_text_file(path.string(), "state_dir");
  if (!text) return text.error();
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return make_error(ErrorCode::io, path.string() + " is not valid JSON; move it away to start afresh", "state_dir");
  const int64_t saved = doc.value("saved_ms", int64_t{0});
  MutexLock lock(mu_);  // uncontended (create() runs it before anyone has the cloud); for the analysis
  for (const auto& j : doc.value("instances", json::array())) {
    auto info = instance_from_json(j, "state.instances");
    if (!info) return make_error(ErrorCode::io, path.string() + ": " + info.error().message, "state_dir");
    auto inst = std::make_unique<Inst>();
    inst->info = *info;
    inst->tag = j.value("tag", "");
    inst->name = j.value("name", "");
    inst->server = j.value("server", "");
    if (j.contains("ended_ms") && j["ended_ms"].is_number_integer()) inst->ended_ms = j["ended_ms"].get<int64_t>();
    inst->worker_status = j.value("worker", "");
    if (!inst->ended_ms) {
      inst->ended_ms = std::max(saved, inst->info.launched_ms);
      inst->info.state = "terminated";
      inst->info.reason = "cloudsim-restart";
      inst->worker_status = "lost with the previous cloudsim";
    } else if (inst->info.state != "terminated") {
      inst->info.state = "terminated";
    }
    by_id_[inst->info.id] = inst.get();
    instances_.push_back(std::move(inst));
  }
  return {};
}

}  // namespace jobctl::cloud::sim
