#include "train/app/cli_options.h"

#include <charconv>

namespace jobctl::train {

namespace {

Error usage(const std::string& message, const std::string& flag) { return make_error(ErrorCode::usage, message, flag); }

template <class Int>
Status parse_int(const std::string& flag, const std::string& text, Int lo, Int hi, Int& out) {
  Int v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    return usage(flag + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got \"" +
                     text + "\")",
                 flag);
  out = v;
  return ok_status();
}

}  // namespace

std::string usage_text() {
  return "usage: jobctl-train --spec SPEC.json --out DIR [--resume CKPT|auto] [--device cpu|cuda|auto]\n"
         "                    [--data-dir DIR] [--threads N] [--log-every N] [--max-steps N]\n"
         "       jobctl-train --measure-cpu\n"
         "Trains one job spec, printing JSON lines of progress on stdout (docs/train-cli.md); with\n"
         "--measure-cpu, prints one core's FP32 GEMM throughput on the models' products instead.\n";
}

Expected<CliOptions> parse_cli(const std::vector<std::string>& args) {
  CliOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline = false;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (flag == "--measure-cpu") {
      if (has_inline) return usage("--measure-cpu takes no value", flag);
      o.measure_cpu = true;
      continue;
    }
    static const char* kWithValue[] = {"--spec",    "--out",       "--resume",   "--device",
                                       "--data-dir", "--threads", "--log-every", "--max-steps"};
    bool known = false;
    for (const char* k : kWithValue) known = known || flag == k;
    if (!known) return usage("unknown option " + flag, flag);
    if (!has_inline) {
      if (i + 1 >= args.size()) return usage(flag + " needs a value", flag);
      value = args[++i];
    }
    if (value.empty()) return usage(flag + " must not be empty", flag);
    if (flag == "--spec") o.spec_path = value;
    else if (flag == "--out") o.out_dir = value;
    else if (flag == "--resume") o.resume = value;
    else if (flag == "--device") {
      if (value != "cpu" && value != "cuda" && value != "auto")
        return usage("--device must be cpu, cuda or auto (got \"" + value + "\")", flag);
      o.device = value;
    } else if (flag == "--data-dir") o.data_dir = value;
    else if (flag == "--threads") {
      if (auto st = parse_int(flag, value, 1, 1024, o.threads); !st) return Unexpected{std::move(st).error()};
    } else if (flag == "--log-every") {
      if (auto st = parse_int(flag, value, 1, 1'000'000'000, o.log_every); !st) return Unexpected{std::move(st).error()};
    } else if (flag == "--max-steps") {
      if (auto st = parse_int<int64_t>(flag, value, 1, INT64_MAX, o.max_steps); !st)
        return Unexpected{std::move(st).error()};
    }
  }
  if (o.help || o.measure_cpu) return o;
  if (o.spec_path.empty()) return usage("--spec is required", "--spec");
  if (o.out_dir.empty()) return usage("--out is required", "--out");
  return o;
}

}  // namespace jobctl::train
