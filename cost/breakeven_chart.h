// The break-even report as a chart: hourly cost against utilisation for the owned GPU (amortised
// and marginal) and the cloud offer (on-demand, spot), with the break-even utilisation marked.
// A self-contained SVG document (no scripts, no external fonts), for the CLI (`--svg FILE`,
// `-o svg`) and the daemon's report endpoint alike.
//
// Thread safety: pure function.
#pragma once

#include <string>

#include "cost/breakeven.h"

namespace jobctl::cost {

std::string breakeven_svg(const BreakevenReport& report);

}  // namespace jobctl::cost
