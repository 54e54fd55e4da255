#include "daemon/store/records.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace jobctl::daemon::store {

using nlohmann::json;

Expected<PlacementChoice> placement_choice_from_json(json row) {
  if (!row.is_object()) return make_error(ErrorCode::io, "the chosen candidate is not a JSON object", "chosen");
  PlacementChoice c;
  auto bad = [](const char* key, const char* want) {
    return make_error(ErrorCode::io, std::string("the chosen candidate's \"") + key + "\" is not " + want,
                      std::string("chosen.") + key);
  };
  auto option = row.find("option");
  if (option == row.end() || !option->is_string()) return bad("option", "a string");
  auto kind = scheduler::parse_option_name(option->get<std::string>());
  if (!kind) return bad("option", "local, on_demand, spot or slurm");
  c.option = *kind;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"gpu", &c.gpu}, {"instance_type", &c.instance_type},
                          {"region", &c.region}, {"zone", &c.zone}, {"partition", &c.partition}}) {
    auto it = row.find(key);
    if (it == row.end() || it->is_null()) continue;
    if (!it->is_string()) return bad(key, "a string or null");
    *out = it->get<std::string>();
  }
  for (auto [key, out] : {std::pair<const char*, double*>{"usd_per_hour", &c.usd_per_hour},
                          {"queue_wait_hours", &c.queue_wait_hours}, {"estimated_hours", &c.estimated_hours},
                          {"estimated_cost_usd", &c.estimated_cost_usd}}) {
    auto it = row.find(key);
    if (it == row.end()) continue;
    if (!it->is_number()) return bad(key, "a number");
    *out = it->get<double>();
  }
  // The machine's GPUs: "machine_gpus"; a document from before it says them in "gpus" (now the
  // job's, as "job_gpus" is).
  const char* machine_key = row.contains("machine_gpus") ? "machine_gpus" : "gpus";
  for (auto [key, out] : {std::pair<const char*, int*>{machine_key, &c.gpus}, {"job_gpus", &c.job_gpus}}) {
    auto it = row.find(key);
    if (it == row.end()) continue;
    if (!it->is_number_integer()) return bad(key, "an integer");
    *out = it->get<int>();
  }
  if (auto it = row.find("meets_deadline"); it != row.end()) {
    if (!it->is_boolean()) return bad("meets_deadline", "true or false");
    c.meets_deadline = it->get<bool>();
  }
  c.row = std::move(row);
  return c;
}

double JobProgress::done_fraction() const {
  if (total_steps <= 0 || step <= 0) return 0;
  return std::clamp(step / total_steps, 0.0, 1.0);
}

namespace {

// The named numbers of a report object (`what`: "progress" or "result"); a missing one stays 0.
Status read_figures(std::string_view text, const std::string& row, const char* what,
                    std::initializer_list<std::pair<const char*, double*>> figures) {
  const json p = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!p.is_object()) return make_error(ErrorCode::io, row + ": the stored " + what + " is not a JSON object", what);
  for (auto [key, field] : figures) {
    auto it = p.find(key);
    if (it == p.end()) continue;
    if (!it->is_number())
      return make_error(ErrorCode::io, row + ": the stored " + what + "'s \"" + key + "\" is not a number",
                        std::string(what) + "." + key);
    *field = it->get<double>();
  }
  return {};
}

}  // namespace

Expected<JobProgress> decode_progress(std::string_view text, const std::string& row) {
  JobProgress out;
  Status st = read_figures(text, row, "progress",
                           {{"step", &out.step}, {"total_steps", &out.total_steps}, {"step_ms", &out.step_ms},
                            {"start_step", &out.start_step}});
  if (!st) return std::move(st).error();
  return out;
}

Expected<nlohmann::json> decode_placement_document(std::string_view text, const std::string& row) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object())
    return make_error(ErrorCode::io, row + ": the stored placement document is not a JSON object");
  if (auto c = doc.find("chosen"); c != doc.end() && !c->is_object() && !c->is_null())
    return make_error(ErrorCode::io, row + ": the stored placement document's chosen is not an object");
  return doc;
}

Expected<JobResult> decode_result(std::string_view text, const std::string& row) {
  JobResult out;
  Status st = read_figures(text, row, "result", {{"elapsed_s", &out.elapsed_s}, {"steps", &out.steps}});
  if (!st) return std::move(st).error();
  return out;
}

Expected<const train::JobSpec*> JobRow::decoded_spec() const {
  if (spec) return spec.get();
  if (!spec_error.empty())
    return make_error(ErrorCode::io, "job " + std::to_string(id) + ": the stored spec does not decode: " + spec_error);
  return make_error(ErrorCode::internal, "job " + std::to_string(id) + " was read without its spec");
}

std::string_view to_string(WorkerState s) {
  switch (s) {
    case WorkerState::active: return "active";
    case WorkerState::lost: return "lost";
    case WorkerState::gone: return "gone";
  }
  return "active";
}

std::optional<WorkerState> parse_worker_state(std::string_view name) {
  for (WorkerState s : {WorkerState::active, WorkerState::lost, WorkerState::gone}) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}

std::string_view to_string(TokenRole r) {
  switch (r) {
    case TokenRole::admin: return "admin";
    case TokenRole::user: return "user";
    case TokenRole::worker: return "worker";
  }
  return "user";
}

std::optional<TokenRole> parse_token_role(std::string_view name) {
  for (TokenRole r : {TokenRole::admin, TokenRole::user, TokenRole::worker}) {
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& notifiable_events() {
  static const std::vector<std::string_view> list = {"succeeded", "failed", "cancelled", "held", "over_budget", "moved"};
  return list;
}

bool is_notifiable_event(std::string_view type) {
  const auto& list = notifiable_events();
  return std::find(list.begin(), list.end(), type) != list.end();
}

std::string_view delivery_state_name(DeliveryState s) {
  switch (s) {
    case DeliveryState::pending: return "pending";
    case DeliveryState::delivered: return "delivered";
    case DeliveryState::failed: return "failed";
  }
  return "pending";
}

std::optional<DeliveryState> parse_delivery_state(std::string_view name) {
  for (DeliveryState s : {DeliveryState::pending, DeliveryState::delivered, DeliveryState::failed}) {
    if (delivery_state_name(s) == name) return s;
  }
  return std::nullopt;
}

}  // namespace jobctl::daemon::store
