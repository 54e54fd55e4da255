#include "scheduler/option_kind.h"

namespace jobctl::scheduler {

std::string_view to_string(OptionKind k) {
  switch (k) {
    case OptionKind::local: return "local";
    case OptionKind::on_demand: return "on-demand";
    case OptionKind::spot: return "spot";
    case OptionKind::slurm: return "slurm";
  }
  return "local";
}

std::string_view option_name(OptionKind k) {
  switch (k) {
    case OptionKind::local: return "local";
    case OptionKind::on_demand: return "on_demand";
    case OptionKind::spot: return "spot";
    case OptionKind::slurm: return "slurm";
  }
  return "local";
}

std::optional<OptionKind> parse_option_name(std::string_view name) {
  for (OptionKind k : {OptionKind::local, OptionKind::on_demand, OptionKind::spot, OptionKind::slurm}) {
    if (option_name(k) == name) return k;
  }
  return std::nullopt;
}

}  // namespace jobctl::scheduler
