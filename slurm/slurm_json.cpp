#include "slurm/slurm_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <nlohmann/json.hpp>

namespace jobctl::slurm {

using nlohmann::json;

namespace {

// Slurm's NO_VAL / INFINITE markers for 32-bit fields (0xfffffffe, 0xffffffff): "not set".
constexpr int64_t kInfinite32 = 0xfffffffe;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

// A number in either form: 5, or {"set": true, "infinite": false, "number": 5}. nullopt when
// absent, null, unset or infinite.
std::optional<int64_t> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const json* v = &*it;
  if (v->is_object()) {
    if (!v->value("set", true) || v->value("infinite", false)) return std::nullopt;
    auto n = v->find("number");
    if (n == v->end()) return std::nullopt;
    v = &*n;
  }
  if (v->is_number_integer() || v->is_number_unsigned()) {
    const auto n = v->get<int64_t>();
    if (n >= kInfinite32) return std::nullopt;
    return n;
  }
  if (v->is_number_float()) return static_cast<int64_t>(v->get<double>());
  return std::nullopt;
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : 0;
}

// The list of the response ("jobs", "nodes"), with the response's own errors turned into ours.
Expected<const json*> response_list(const json& doc, const char* list, const std::string& what) {
  if (!doc.is_object())
    return make_error(ErrorCode::invalid_argument, what + " output is not a JSON object", what);
  if (auto errors = doc.find("errors"); errors != doc.end() && errors->is_array() && !errors->empty()) {
    const json& first = (*errors)[0];
    std::string message = first.dump();
    if (first.is_object()) {
      const std::string description = text(first, "description"), error = text(first, "error");
      message = description.empty() ? error : error.empty() ? description : description + " (" + error + ")";
    }
    return make_error(ErrorCode::unavailable, what + " reported an error: " + message, what);
  }
  auto it = doc.find(list);
  if (it == doc.end() || !it->is_array())
    return make_error(ErrorCode::invalid_argument, what + " output has no \"" + list + "\" list",
                      what + "." + list);
  return &*it;
}

}  // namespace

bool SlurmJob::running() const {
  static const char* const kHolding[] = {"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING",
                                         "STAGE_OUT", "SIGNALING", "RESIZING", "STOPPED"};
  for (const char* s : kHolding)
    if (state == s) return true;
  // 23.11+ keeps the base state and lists COMPLETING as a flag.
  return std::find(state_flags.begin(), state_flags.end(), "COMPLETING") != state_flags.end();
}

bool SlurmNode::usable() const {
  // sinfo's long states: "idle", "mixed", "allocated", "down", "drained", "draining", "fail", ...
  // (23.11+ adds flags to the same word, e.g. "IDLE+DRAIN"); compare in lower case.
  for (const char* bad : {"down", "drain", "fail", "maint", "unknown", "inval", "future", "reboot", "power"})
    if (state.find(bad) != std::string::npos) return false;
  return !state.empty();
}

GpuRequest parse_gpu_gres(std::string_view gres) {
  GpuRequest out;
  size_t pos = 0;
  while (pos <= gres.size()) {
    size_t comma = gres.find(',', pos);
    if (comma == std::string_view::npos) comma = gres.size();
    std::string_view item = gres.substr(pos, comma - pos);
    pos = comma + 1;
    if (auto paren = item.find('('); paren != std::string_view::npos) item = item.substr(0, paren);
    for (std::string_view prefix : {"gres:", "gres/"})
      if (item.substr(0, prefix.size()) == prefix) item.remove_prefix(prefix.size());
    if (item.substr(0, 3) != "gpu") continue;
    item.remove_prefix(3);
    if (!item.empty() && item[0] != ':' && item[0] != '=') continue;  // "gpus_per..." or another name
    // What follows: "", ":N", "=N", ":type", ":type:N", ":type=N".
    std::string_view type, count = "1";
    if (!item.empty()) {
      item.remove_prefix(1);
      const size_t sep = item.find_first_of(":=");
      if (sep != std::string_view::npos) {
        type = item.substr(0, sep);
        count = item.substr(sep + 1);
      } else if (!item.empty() && std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); })) {
        count = item;
      } else {
        type = item;
      }
    }
    out.count += parse_int(count);
    if (out.type.empty()) out.type = lower(type);
  }
  return out;
}

Expected<std::vector<SlurmJob>> parse_squeue_json(std::string_view input) {
  const json doc = json::parse(input, nullptr, false);
  if (doc.is_discarded()) return make_error(ErrorCode::malformed_json, "squeue --json printed no valid JSON", "squeue");
  auto list = response_list(doc, "jobs", "squeue");
  if (!list) return list.error();
  std::vector<SlurmJob> out;
  out.reserve((*list)->size());
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& j = (**list)[i];
    const std::string field = "squeue.jobs[" + std::to_string(i) + "]";
    if (!j.is_object()) return make_error(ErrorCode::invalid_argument, field + " is not an object", field);
    SlurmJob s;
    auto id = number(j, "job_id");
    if (!id || *id <= 0) return make_error(ErrorCode::invalid_argument, field + ".job_id is missing", field + ".job_id");
    s.id = *id;
    auto state = j.find("job_state");
    if (state != j.end() && state->is_string()) {
      s.state = upper(state->get<std::string>());
    } else if (state != j.end() && state->is_array() && !state->empty() && (*state)[0].is_string()) {
      s.state = upper((*state)[0].get<std::string>());
      for (size_t k = 1; k < state->size(); ++k)
        if ((*state)[k].is_string()) s.state_flags.push_back(upper((*state)[k].get<std::string>()));
    } else {
      return make_error(ErrorCode::invalid_argument, field + ".job_state is missing", field + ".job_state");
    }
    s.name = text(j, "name");
    s.comment = text(j, "comment");
    s.user_id = number(j, "user_id").value_or(-1);
    s.partition = text(j, "partition");
    s.reason = text(j, "state_reason");
    s.nodes = text(j, "nodes");
    s.restart_count = static_cast<int>(number(j, "restart_cnt").value_or(0));
    s.submit_s = number(j, "submit_time").value_or(0);
    s.start_s = number(j, "start_time").value_or(0);
    s.end_s = number(j, "end_time").value_or(0);
    s.preempt_s = number(j, "preempt_time").value_or(0);
    if (auto limit = number(j, "time_limit")) s.time_limit_s = *limit * 60;  // minutes
    s.priority = number(j, "priority").value_or(0);
    s.node_count = static_cast<int>(std::max<int64_t>(1, number(j, "node_count").value_or(1)));
    if (auto ec = j.find("exit_code"); ec != j.end()) {
      if (ec->is_object()) {  // {"status": [...], "return_code": N, "signal": {"id": S, ...}}
        const int64_t sig = ec->contains("signal") && (*ec)["signal"].is_object()
                                ? number((*ec)["signal"], "id").value_or(0) : 0;
        s.exit_code = static_cast<int>(sig > 0 ? 128 + sig : number(*ec, "return_code").value_or(0));
      } else {  // the raw wait status: 768 is exit code 3, 9 is SIGKILL
        const int64_t raw = number(j, "exit_code").value_or(0);
        s.exit_code = static_cast<int>((raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f));
      }
    }
    // --gres gpu[:type]:N is per node; --gpus N is per job.
    const GpuRequest per_node = parse_gpu_gres(text(j, "tres_per_node"));
    const GpuRequest per_job = parse_gpu_gres(text(j, "tres_per_job"));
    s.gpus = per_node.count * s.node_count + per_job.count;
    s.gpu_type = per_node.type.empty() ? per_job.type : per_node.type;
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::vector<SlurmNode>> parse_sinfo_json(std::string_view input) {
  const json doc = json::parse(input, nullptr, false);
  if (doc.is_discarded()) return make_error(ErrorCode::malformed_json, "sinfo --json printed no valid JSON", "sinfo");
  // {"nodes": [...]}: one entry per node, the same list slurmrestd's /nodes answers.
  auto list = response_list(doc, "nodes", "sinfo");
  if (!list) return list.error();
  std::vector<SlurmNode> out;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& j = (**list)[i];
    const std::string field = "sinfo.nodes[" + std::to_string(i) + "]";
    if (!j.is_object()) return make_error(ErrorCode::invalid_argument, field + " is not an object", field);
    SlurmNode n;
    n.name = text(j, "name");
    if (n.name.empty()) return make_error(ErrorCode::invalid_argument, field + ".name is missing", field + ".name");
    if (auto st = j.find("state"); st != j.end() && st->is_string()) n.state = lower(st->get<std::string>());
    else if (st != j.end() && st->is_array()) {
      for (const auto& s : *st)
        if (s.is_string()) n.state += (n.state.empty() ? "" : "+") + lower(s.get<std::string>());
    }
    if (auto flags = j.find("state_flags"); flags != j.end() && flags->is_array())
      for (const auto& f : *flags)
        if (f.is_string()) n.state += "+" + lower(f.get<std::string>());
    if (auto parts = j.find("partitions"); parts != j.end() && parts->is_array())
      for (const auto& p : *parts)
        if (p.is_string()) n.partitions.push_back(p.get<std::string>());
    n.cpus = static_cast<int>(number(j, "cpus").value_or(0));
    const GpuRequest g = parse_gpu_gres(text(j, "gres"));
    n.gpus = g.count;
    n.gpu_type = g.type;
    out.push_back(std::move(n));
  }
  return out;
}

Expected<int64_t> parse_sbatch_parsable(std::string_view input) {
  std::string_view s = input;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  // The last line: sbatch may print warnings before the id.
  if (auto nl = s.rfind('\n'); nl != std::string_view::npos) s = s.substr(nl + 1);
  if (auto semi = s.find(';'); semi != std::string_view::npos) s = s.substr(0, semi);
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0)
    return make_error(ErrorCode::invalid_argument,
                      "sbatch --parsable printed no job id (got '" + std::string(input.substr(0, 200)) + "')",
                      "sbatch");
  return id;
}

}  // namespace jobctl::slurm
