// jobctl catalog update --from URL [--cloud CLOUD] [--dir DIR]
// jobctl catalog ls [--dir DIR] [--gpu MODEL] [-o table|json|csv]
// The price catalog: the built-in seed plus SkyPilot-format CSVs fetched into a folder (the
// download goes through the CLI's one HTTP client, client/http_client.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "cli/cost_command_support.h"
#include "cli/table.h"
#include "client/http_client.h"
#include "cost/catalog_cloud.h"
#include "cost/cost_json.h"
#include "cost/gpu_specs.h"
#include "cost/price_catalog.h"

namespace jobctl::cli {

namespace {

std::string default_catalog_dir() {
  if (const char* d = std::getenv("JOBCTL_DATA_DIR"); d && *d) return std::string(d) + "/catalog";
  return "data/catalog";
}

void run_catalog_update(CliContext& ctx, const std::string& url, std::string cloud, std::string dir) {
  if (dir.empty()) dir = default_catalog_dir();
  // A SkyPilot catalog is a few MiB; 256 MiB bounds what a wrong URL can make us hold.
  auto answer = client::fetch_url(url, 120'000, uint64_t{256} << 20);
  if (!answer) fail(ctx, "--from: cannot fetch " + url + ": " + answer.error().message, kIoError);
  const long status = answer->status;  // 0: a file:// URL
  if (status != 0 && (status < 200 || status >= 300))
    fail(ctx, "--from: " + url + " answered HTTP " + std::to_string(status), kIoError);
  const std::string& body = answer->body;
  if (cloud.empty()) {
    std::string name = url.substr(url.find_last_of('/') + 1);
    const size_t cut = name.find_first_of("_.-");
    cloud = name.substr(0, cut);
    // SkyPilot's layout: .../catalogs/v7/<cloud>/vms.csv
    if (cloud == "vms") {
      const std::string parent = url.substr(0, url.find_last_of('/'));
      cloud = parent.substr(parent.find_last_of('/') + 1);
    }
  }
  if (cloud.empty()) fail(ctx, "--cloud is required: the cloud cannot be told from the URL");
  auto parsed = cost::parse_skypilot_csv(body, cloud, url);  // validate before storing anything
  if (!parsed) fail(ctx, "--from: " + url + " is not a usable catalog: " + parsed.error().message);
  if (parsed->offers.empty()) fail(ctx, "--from: " + url + " has no usable offers");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ctx, "cannot create " + dir + ": " + ec.message(), kIoError);
  const std::string target = dir + "/" + cloud + ".csv";
  const std::string temp = target + ".tmp";
  write_file(ctx, temp, body);
  std::filesystem::rename(temp, target, ec);  // atomic: readers see the old file or the new one
  if (ec) fail(ctx, "cannot replace " + target + ": " + ec.message(), kIoError);
  *ctx.out << "stored " << parsed->offers.size() << " offers for " << cloud << " in " << target;
  if (!parsed->warnings.empty()) *ctx.out << " (" << parsed->warnings.size() << " rows skipped)";
  *ctx.out << "\n";
}

void run_catalog_ls(CliContext& ctx, std::string dir, const std::string& gpu) {
  check_output(ctx, {"table", "json", "csv"});
  if (dir.empty()) dir = default_catalog_dir();
  std::vector<cost::Offer> offers = cost::seed_catalog();
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".csv") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    // The cloud is read from the content (SkyPilot names every file vms.csv); the file name only
    // when the content does not say.
    const std::string text = read_file(ctx, path.string(), "catalog");
    const std::string cloud = cost::cloud_from_catalog_content(text).value_or(cost::cloud_from_file_name(path.string()));
    auto parsed = cost::parse_skypilot_csv(text, cloud, path.string());
    if (!parsed) fail(ctx, path.string() + ": " + parsed.error().message);
    for (const auto& w : parsed->warnings) *ctx.err << "warning: " << path.string() << ": " << w << "\n";
    for (auto& o : parsed->offers) offers.push_back(std::move(o));
  }
  if (!gpu.empty()) {
    // A request, as resources.gpu reads it: "A100" every A100, "A100-80GB" the 80 GB ones.
    auto want = cost::parse_gpu_request(gpu);
    if (!want) fail(ctx, "--gpu: " + want.error().message);
    std::erase_if(offers, [&](const cost::Offer& o) {
      const cost::GpuSpec* spec = cost::identify_gpu(o.gpu_model, o.gpu_memory_gb);
      return !spec || !want->matches(*spec);
    });
  }
  if (ctx.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& o : offers) j.push_back(o);
    *ctx.out << j.dump(2) << "\n";
    return;
  }
  Table t({"offer", "region", "gpu", "gpus", "GiB/gpu", "on-demand $/h", "spot $/h", "source"}, 40);
  for (const auto& o : offers)
    t.add_row({o.name(), o.region + (o.zone.empty() ? "" : "/" + o.zone), o.gpu_model, std::to_string(o.gpu_count),
               fixed_decimal(o.gpu_memory_gb, 1), fixed_decimal(o.on_demand_usd_per_hour, 4),
               o.spot_usd_per_hour ? fixed_decimal(*o.spot_usd_per_hour, 4) : "-", o.source});
  if (ctx.output == "csv") {
    *ctx.out << "offer,region,gpu,gpus,on_demand_usd_per_hour,spot_usd_per_hour\n";
    for (const auto& o : offers)
      *ctx.out << o.name() << "," << o.region << "," << o.gpu_model << "," << o.gpu_count << ","
               << o.on_demand_usd_per_hour << "," << (o.spot_usd_per_hour ? fixed_decimal(*o.spot_usd_per_hour, 4) : "") << "\n";
    return;
  }
  t.print(*ctx.out);
}

}  // namespace

void add_catalog_commands(CLI::App& app, CliContext& ctx) {
  struct CatalogArgs { std::string from, cloud, dir, gpu; };
  auto ca = std::make_shared<CatalogArgs>();
  auto* catalog = app.add_subcommand("catalog", "The price catalog (built-in seed plus fetched SkyPilot CSVs)");
  catalog->require_subcommand(1);
  auto* update = catalog->add_subcommand("update", "Fetch a SkyPilot-format catalog CSV, validate it, store it");
  update->add_option("--from", ca->from, "URL of the CSV (http, https or file)")->required();
  update->add_option("--cloud", ca->cloud, "its cloud (default: from the URL)");
  update->add_option("--dir", ca->dir, "where to store it (default: $JOBCTL_DATA_DIR/catalog, else ./data/catalog)");
  update->callback([&ctx, ca] { run_catalog_update(ctx, ca->from, ca->cloud, ca->dir); });
  auto* ls = catalog->add_subcommand("ls", "List the offers: the built-in catalog plus the stored CSVs");
  ls->add_option("--dir", ca->dir, "stored catalogs (default: $JOBCTL_DATA_DIR/catalog, else ./data/catalog)");
  ls->add_option("--gpu", ca->gpu, "only offers of this GPU model");
  ls->add_option("-o,--output", ctx.output, "table (default), json or csv");
  ls->callback([&ctx, ca] { run_catalog_ls(ctx, ca->dir, ca->gpu); });
}

}  // namespace jobctl::cli
