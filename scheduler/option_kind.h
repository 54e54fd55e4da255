// The kinds of placement option: an owned GPU pool, a cloud instance on demand or on spot, a
// Slurm partition. Their stored and wire names (the placement document's "option", the chosen
// candidate jobctld keeps per job) are written and read here only, so a switch over the kinds is
// checked by -Wswitch everywhere.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace jobctl::scheduler {

enum class OptionKind : uint8_t { local, on_demand, spot, slurm };

// For people: "local", "on-demand", "spot", "slurm".
std::string_view to_string(OptionKind k);
// The document's and the store's name: "local", "on_demand", "spot", "slurm".
std::string_view option_name(OptionKind k);
// The kind an option_name names; nullopt for any other text.
std::optional<OptionKind> parse_option_name(std::string_view name);
// A cloud instance (on demand or spot).
inline bool is_cloud(OptionKind k) { return k == OptionKind::on_demand || k == OptionKind::spot; }

}  // namespace jobctl::scheduler
