#include "daemon/ledger/ledger.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::ledger {

using nlohmann::json;

namespace {

double number(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// A candidate's GPU model as the catalog names it ("" for none or a CPU).
std::string gpu_model_of(const json& c) {
  auto it = c.find("gpu");
  if (it == c.end() || !it->is_string()) return "";
  const cost::GpuSpec* spec = cost::identify_gpu(it->get<std::string>(), number(c, "gpu_memory_gib"));
  if (spec && spec->family == "cpu") return "";
  return spec ? std::string(spec->name) : cost::canonical_gpu_name(it->get<std::string>());
}

}  // namespace

// The same GPU model and count on demand: the cheapest on-demand offer with the chosen GPU in the
// placement's table, per GPU-hour, times the GPUs the job takes. Only an offer of that model is a
// reference (a fit or policy rejection does not change an offer's price per GPU); another model's
// price would be no baseline at all.
std::optional<double> ledger_on_demand_reference(const std::string& placement_text) {
  auto decoded = store::decode_placement_document(placement_text, "placement");
  if (!decoded) return std::nullopt;
  const json& p = *decoded;
  auto chosen = p.find("chosen");
  auto cands = p.find("candidates");
  if (chosen == p.end() || !chosen->is_object() || cands == p.end() || !cands->is_array()) return std::nullopt;
  const std::string model = gpu_model_of(*chosen);
  const double job_gpus = number(*chosen, "job_gpus");
  if (model.empty() || job_gpus <= 0) return std::nullopt;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& c : *cands) {
    if (!c.is_object() || c.value("option", "") != "on_demand" || gpu_model_of(c) != model) continue;
    // The instance's GPUs ("gpus" in a document from before "machine_gpus").
    const double price = number(c, "usd_per_hour", -1), gpus = number(c, c.contains("machine_gpus") ? "machine_gpus" : "gpus", -1);
    if (price > 0 && gpus > 0) best = std::min(best, price / gpus);
  }
  if (!std::isfinite(best)) return std::nullopt;
  return best * job_gpus;
}

std::string ledger_user(store::Store& store, int64_t job_id) {
  if (job_id <= 0) return "";
  auto owner = store.job_owner(job_id);
  if (owner && *owner && !(*owner)->empty()) return **owner;
  auto job = store.get_job(job_id);
  if (!job || !*job) return "";
  return (*job)->spec ? (*job)->spec->user : "";
}

Expected<std::string> ledger_user_in(store::WriteTxn& txn, const store::JobRow& job) {
  auto owner = txn.job_owner(job.id);
  if (!owner) return owner.error();
  if (*owner && !(*owner)->empty()) return **owner;
  return job.spec ? job.spec->user : std::string();
}

int64_t billed_seconds(int64_t start_ms, int64_t end_ms) {
  if (end_ms <= start_ms) return 0;
  return (end_ms - start_ms + 999) / 1000;
}

Status validate_ledger_entry(const LedgerEntry& e) {
  if (e.resource.empty() || e.resource.size() > 300)
    return make_error(ErrorCode::invalid_argument, "ledger.resource must be a non-empty string", "ledger.resource");
  if (e.kind != "local" && e.kind != "on_demand" && e.kind != "spot")
    return make_error(ErrorCode::invalid_argument, "ledger.kind must be local, on_demand or spot (got '" + e.kind + "')",
                      "ledger.kind");
  if (e.end_ms < e.start_ms)
    return make_error(ErrorCode::invalid_argument, "ledger.end_ms is before ledger.start_ms", "ledger.end_ms");
  if (!(e.usd_per_hour >= 0) || !std::isfinite(e.usd_per_hour))
    return make_error(ErrorCode::invalid_argument, "ledger.usd_per_hour must be a finite number >= 0", "ledger.usd_per_hour");
  if (!(e.on_demand_usd_per_hour >= 0) || !std::isfinite(e.on_demand_usd_per_hour))
    return make_error(ErrorCode::invalid_argument, "ledger.on_demand_usd_per_hour must be a finite number >= 0",
                      "ledger.on_demand_usd_per_hour");
  if (e.job_id < 0) return make_error(ErrorCode::invalid_argument, "ledger.job_id must be >= 0", "ledger.job_id");
  if (e.open && e.end_ms != e.start_ms)
    return make_error(ErrorCode::invalid_argument, "an open ledger entry has no end yet (end_ms must be start_ms)",
                      "ledger.end_ms");
  return {};
}

Status Ledger::accrue_in(store::WriteTxn& txn, LedgerEntry e) {
  if (auto st = validate_ledger_entry(e); !st) return st;
  double reference = e.on_demand_usd_per_hour;
  if (reference <= 0 && e.kind == "on_demand") reference = e.usd_per_hour;
  if (reference <= 0 && e.job_id > 0) {
    auto job = txn.job(e.job_id);
    if (!job) return job.error();
    if (*job && (*job)->placement_json) {
      if (auto r = ledger_on_demand_reference(*(*job)->placement_json)) reference = *r;
    }
  }
  // Still 0: no on-demand equivalent (no offer of the same GPU model); the reports say so rather
  // than compare with another GPU's price.
  store::LedgerRecord row;
  row.resource = e.resource;
  row.start_ms = e.start_ms;
  row.end_ms = e.end_ms;
  row.job_id = e.job_id;
  row.kind = e.kind;
  row.usd_per_hour = e.usd_per_hour;
  row.on_demand_usd_per_hour = reference;
  row.user = e.user;
  row.billed_seconds = billed_seconds(e.start_ms, e.end_ms);
  row.usd = static_cast<double>(row.billed_seconds) * e.usd_per_hour / 3600.0;
  row.on_demand_usd = static_cast<double>(row.billed_seconds) * reference / 3600.0;
  row.open = e.open;
  return txn.upsert_ledger(row);
}

Status Ledger::accrue(LedgerEntry entry) {
  if (auto st = validate_ledger_entry(entry); !st) return st;
  return store_.write([e = std::move(entry)](store::WriteTxn& txn) { return accrue_in(txn, e); });
}

Expected<std::vector<LedgerRow>> Ledger::rows(int64_t from_ms, int64_t to_ms) {
  auto recs = store_.ledger_rows(from_ms, to_ms);
  if (!recs) return recs.error();
  std::vector<LedgerRow> out;
  out.reserve(recs->size());
  for (auto& r : *recs) {
    LedgerRow row;
    row.entry = LedgerEntry{r.job_id, r.resource, r.kind, r.start_ms, r.end_ms, r.usd_per_hour, r.user,
                            r.on_demand_usd_per_hour};
    row.billed_seconds = r.billed_seconds;
    row.usd = r.usd;
    row.on_demand_usd = r.on_demand_usd;
    row.entry.open = r.open;  // its end_ms and figures are as of now
    out.push_back(std::move(row));
  }
  return out;
}

Expected<double> Ledger::job_total_usd(int64_t job_id) { return store_.ledger_job_total_usd(job_id); }

}  // namespace jobctl::daemon::ledger
