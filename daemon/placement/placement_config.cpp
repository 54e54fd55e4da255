#include "daemon/placement/placement_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/text_file.h"
#include "cost/cost_json.h"
#include "daemon/config/config_fields.h"
#include "scheduler/deadline_policy.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

using config_fields::bad;
using config_fields::only;
using config_fields::read_bool;
using config_fields::read_number;
using config_fields::read_string;

Status apply_placement_config(const json& doc, PlacementSettings& s) {
  if (auto it = doc.find("cost"); it != doc.end()) {
    const json& c = *it;
    if (auto st = only(c, {"pricing", "local_gpus", "seed_catalog", "catalog_files",
                           "default_electricity_usd_per_kwh"}, "cost");
        !st)
      return st;
    if (auto p = c.find("pricing"); p != c.end()) {
      if (!p->is_string()) return bad("cost.pricing", "must be a string");
      auto pol = cost::parse_local_pricing(p->get<std::string>());
      if (!pol) return bad("cost.pricing", "must be amortised or marginal");
      s.pricing = *pol;
    }
    if (auto g = c.find("local_gpus"); g != c.end()) {
      if (!g->is_array()) return bad("cost.local_gpus", "must be an array");
      s.local_gpus.clear();
      for (size_t i = 0; i < g->size(); ++i) {
        auto inv = cost::local_gpu_from_json((*g)[i]);
        const std::string f = "cost.local_gpus[" + std::to_string(i) + "]";
        if (!inv) {
          Error e = inv.error();
          e.field = e.field.empty() ? f : f + "." + e.field;
          e.message = f + ": " + e.message;
          return e;
        }
        s.local_gpus.push_back(std::move(*inv));
      }
    }
    if (auto st = read_bool(c, "seed_catalog", "cost", s.seed_catalog); !st) return st;
    if (auto st = read_number(c, "default_electricity_usd_per_kwh", "cost", s.default_electricity_usd_per_kwh); !st)
      return st;
    if (auto f = c.find("catalog_files"); f != c.end()) {
      if (!f->is_array()) return bad("cost.catalog_files", "must be an array");
      s.catalog_files.clear();
      for (size_t i = 0; i < f->size(); ++i) {
        const std::string field = "cost.catalog_files[" + std::to_string(i) + "]";
        const json& e = (*f)[i];
        CatalogFile cf;
        if (e.is_string()) {
          cf.path = e.get<std::string>();
        } else if (e.is_object()) {
          if (auto st = only(e, {"path", "cloud"}, field); !st) return st;
          if (auto st = read_string(e, "path", field, cf.path); !st) return st;
          if (auto st = read_string(e, "cloud", field, cf.cloud); !st) return st;
        } else {
          return bad(field, "must be a path or {\"path\": ..., \"cloud\": ...}");
        }
        if (cf.path.empty()) return bad(field, "needs a path");
        s.catalog_files.push_back(std::move(cf));
      }
    }
  }
  if (auto it = doc.find("placement"); it != doc.end()) {
    const json& p = *it;
    if (auto st = only(p, {"enabled", "cloud_provider", "clouds", "provision_hours",
                           "spot_interruptions_per_hour", "reevaluate_s", "max_reservations", "deadline_policy", "move_margin",
                           "max_moves_per_hour", "warmup_hours", "checkpoint_fixed_seconds", "fair_share", "max_price_jump"},
                       "placement");
        !st)
      return st;
    if (auto st = read_bool(p, "enabled", "placement", s.enabled); !st) return st;
    if (auto st = read_string(p, "cloud_provider", "placement", s.cloud_provider); !st) return st;
    if (auto st = read_number(p, "provision_hours", "placement", s.provision_hours); !st) return st;
    if (auto st = read_number(p, "warmup_hours", "placement", s.warmup_hours); !st) return st;
    if (auto st = read_number(p, "checkpoint_fixed_seconds", "placement", s.checkpoint_fixed_seconds); !st)
      return st;
    if (p.contains("spot_interruptions_per_hour")) {
      double rate = 0;
      if (auto st = read_number(p, "spot_interruptions_per_hour", "placement", rate); !st) return st;
      s.spot_interruptions_per_hour = rate;
    }
    if (auto st = read_string(p, "deadline_policy", "placement", s.deadline_policy); !st) return st;
    if (auto st = config_fields::read_int(p, "reevaluate_s", "placement", s.reevaluate_s); !st) return st;
    if (auto st = config_fields::read_int(p, "max_reservations", "placement", s.max_reservations); !st) return st;
    if (auto st = read_number(p, "move_margin", "placement", s.move_margin); !st) return st;
    if (auto st = read_number(p, "max_price_jump", "placement", s.max_price_jump); !st) return st;
    if (auto st = config_fields::read_int(p, "max_moves_per_hour", "placement", s.max_moves_per_hour); !st)
      return st;
    if (auto c = p.find("clouds"); c != p.end()) {
      if (!c->is_array()) return bad("placement.clouds", "must be an array of cloud names");
      s.clouds.clear();
      for (const auto& name : *c) {
        if (!name.is_string()) return bad("placement.clouds", "must be an array of cloud names");
        s.clouds.push_back(name.get<std::string>());
      }
    }
    if (auto f = p.find("fair_share"); f != p.end()) {
      const std::string at = "placement.fair_share";
      if (!f->is_object()) return bad(at, "must be an object");
      auto& fs = s.fair_share;
      if (auto st = only(*f, {"enabled", "half_life_days", "default_share", "shares", "recompute_s", "max_age_days",
                              "weights"}, at);
          !st)
        return st;
      if (f->contains("enabled")) {
        bool on = false;
        if (auto st = read_bool(*f, "enabled", at, on); !st) return st;
        fs.enabled = on;
      }
      if (auto st = read_number(*f, "half_life_days", at, fs.half_life_days); !st) return st;
      if (auto st = read_number(*f, "default_share", at, fs.default_share); !st) return st;
      if (auto st = config_fields::read_int(*f, "recompute_s", at, fs.recompute_s); !st) return st;
      double max_age_days = static_cast<double>(fs.weights.max_age_ms) / 86'400'000.0;
      if (auto st = read_number(*f, "max_age_days", at, max_age_days); !st) return st;
      if (!(max_age_days > 0 && max_age_days <= 365)) return bad(at + ".max_age_days", "must be between 0 and 365");
      fs.weights.max_age_ms = static_cast<int64_t>(max_age_days * 86'400'000.0);
      if (auto sh = f->find("shares"); sh != f->end()) {
        if (!sh->is_object()) return bad(at + ".shares", "must be an object of user: share");
        fs.shares.clear();
        for (auto e = sh->begin(); e != sh->end(); ++e) {
          if (!e.value().is_number() || !(e.value().get<double>() >= 0))
            return bad(at + ".shares." + e.key(), "must be a number >= 0");
          fs.shares[e.key()] = e.value().get<double>();
        }
      }
      if (auto w = f->find("weights"); w != f->end()) {
        const std::string wat = at + ".weights";
        if (!w->is_object()) return bad(wat, "must be an object");
        if (auto st = only(*w, {"priority", "fair_share", "age", "size"}, wat); !st) return st;
        if (auto st = read_number(*w, "priority", wat, fs.weights.priority); !st) return st;
        if (auto st = read_number(*w, "fair_share", wat, fs.weights.fair_share); !st) return st;
        if (auto st = read_number(*w, "age", wat, fs.weights.age); !st) return st;
        if (auto st = read_number(*w, "size", wat, fs.weights.size); !st) return st;
      }
    }
  }
  return validate(s);
}

Status validate(const PlacementSettings& s) {
  for (size_t i = 0; i < s.local_gpus.size(); ++i)
    if (auto st = cost::validate(s.local_gpus[i]); !st) {
      const std::string f = "cost.local_gpus[" + std::to_string(i) + "]." + st.error().field;
      return make_error(ErrorCode::invalid_argument, f + ": " + st.error().message, f);
    }
  if (!(s.default_electricity_usd_per_kwh >= 0 && s.default_electricity_usd_per_kwh < 100))
    return bad("cost.default_electricity_usd_per_kwh", "must be between 0 and 100");
  if (s.cloud_provider != "" && s.cloud_provider != "sim" && s.cloud_provider != "exec")
    return bad("placement.cloud_provider", "must be \"\", \"sim\" or \"exec\"");
  if (!(s.provision_hours >= 0 && s.provision_hours <= 24))
    return bad("placement.provision_hours", "must be between 0 and 24");
  if (!(s.warmup_hours >= 0 && s.warmup_hours <= 24)) return bad("placement.warmup_hours", "must be between 0 and 24");
  if (!(s.checkpoint_fixed_seconds >= 0 && s.checkpoint_fixed_seconds <= 3600))
    return bad("placement.checkpoint_fixed_seconds", "must be between 0 and 3600");
  if (s.spot_interruptions_per_hour && !(*s.spot_interruptions_per_hour >= 0 && *s.spot_interruptions_per_hour <= 100))
    return bad("placement.spot_interruptions_per_hour", "must be between 0 and 100");
  if (s.reevaluate_s < 1 || s.reevaluate_s > 86400) return bad("placement.reevaluate_s", "must be between 1 and 86400");
  if (!(s.fair_share.half_life_days > 0 && s.fair_share.half_life_days <= 3650))
    return bad("placement.fair_share.half_life_days", "must be between 0 and 3650");
  if (!(s.fair_share.default_share >= 0)) return bad("placement.fair_share.default_share", "must be >= 0");
  if (s.fair_share.recompute_s < 1 || s.fair_share.recompute_s > 86400)
    return bad("placement.fair_share.recompute_s", "must be between 1 and 86400");
  for (const auto& [name, w] : {std::pair<const char*, double>{"priority", s.fair_share.weights.priority},
                                {"fair_share", s.fair_share.weights.fair_share},
                                {"age", s.fair_share.weights.age},
                                {"size", s.fair_share.weights.size}})
    if (!(w >= 0 && w <= 1e9)) return bad(std::string("placement.fair_share.weights.") + name, "must be between 0 and 1e9");
  if (s.max_reservations < 1 || s.max_reservations > 10000)
    return bad("placement.max_reservations", "must be between 1 and 10000");
  if (!(s.move_margin >= 1 && s.move_margin <= 100)) return bad("placement.move_margin", "must be between 1 and 100");
  if (!(s.max_price_jump == 0 || (s.max_price_jump >= 1 && s.max_price_jump <= 1000)))
    return bad("placement.max_price_jump", "must be 0 (no bound) or between 1 and 1000");
  if (s.max_moves_per_hour < 0 || s.max_moves_per_hour > 60)
    return bad("placement.max_moves_per_hour", "must be between 0 and 60");
  if (!scheduler::make_deadline_policy(s.deadline_policy))
    return bad("placement.deadline_policy", "names no deadline policy (up, greedy, on-demand, local-first, adaptive, lifetime)");
  return {};
}

scheduler::PlacementConfig placement_config(const PlacementSettings& s) {
  scheduler::PlacementConfig c;
  c.local_pricing = s.pricing;
  c.provision_hours = s.provision_hours;
  c.warmup_hours = s.warmup_hours;
  c.checkpoint_fixed_seconds = s.checkpoint_fixed_seconds;
  c.spot_interruptions_per_hour = s.spot_interruptions_per_hour;
  c.default_electricity_usd_per_kwh = s.default_electricity_usd_per_kwh;
  c.cloud_launchable = !s.cloud_provider.empty();
  c.slurm_launchable = s.slurm_launchable;
  c.cloud_runs_commands = s.cloud_runs_commands;
  c.cloud_containers = s.cloud_containers;
  c.slurm_containers = s.slurm_containers;
  c.cloud_max_instances = s.cloud_max_instances;
  return c;
}

Expected<std::vector<cost::Offer>> load_offers(const PlacementSettings& s, std::vector<std::string>* warnings) {
  std::vector<cost::Offer> offers;
  if (s.seed_catalog) offers = cost::seed_catalog();
  std::vector<CatalogFile> files = s.catalog_files;
  if (!s.catalog_dir.empty()) {
    std::error_code ec;
    std::vector<std::string> found;
    for (std::filesystem::directory_iterator it(s.catalog_dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file() && it->path().extension() == ".csv") found.push_back(it->path().string());
    std::sort(found.begin(), found.end());
    for (auto& f : found) files.push_back(CatalogFile{f, ""});
  }
  for (const auto& f : files) {
    auto text = read_text_file(f.path, "cost.catalog_files");
    if (!text) return text.error();
    const std::string cloud = f.cloud.empty() ? cost::cloud_from_file_name(f.path) : f.cloud;
    auto parsed = cost::parse_skypilot_csv(*text, cloud, f.path);
    if (!parsed)
      return make_error(parsed.error().code, "catalog file " + f.path + ": " + parsed.error().message,
                        "cost.catalog_files");
    if (warnings)
      for (auto& w : parsed->warnings) warnings->push_back(f.path + ": " + w);
    for (auto& o : parsed->offers) offers.push_back(std::move(o));
  }
  if (!s.clouds.empty()) {
    std::erase_if(offers, [&](const cost::Offer& o) {
      return std::find(s.clouds.begin(), s.clouds.end(), o.cloud) == s.clouds.end();
    });
  }
  return offers;
}

}  // namespace jobctl::daemon::placement
