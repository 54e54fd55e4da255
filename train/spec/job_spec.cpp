#include "train/spec/job_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "train/spec/allowed_mounts.h"
#include "train/spec/image_reference.h"
#include "train/spec/job_sweep.h"
#include "train/spec/json.h"

namespace jobctl::train {

namespace {

using json::Value;

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

constexpr std::array<EnumName<ModelKind>, 2> kModelKinds{{{ModelKind::mlp, "mlp"}, {ModelKind::cnn, "cnn"}}};
constexpr std::array<EnumName<Activation>, 2> kActivations{{{Activation::relu, "relu"}, {Activation::gelu, "gelu"}}};
constexpr std::array<EnumName<DatasetKind>, 2> kDatasets{
    {{DatasetKind::fashion_mnist, "fashion-mnist"}, {DatasetKind::synthetic, "synthetic"}}};
constexpr std::array<EnumName<OptimizerKind>, 2> kOptimizers{
    {{OptimizerKind::sgd, "sgd"}, {OptimizerKind::adamw, "adamw"}}};
constexpr std::array<EnumName<ScheduleKind>, 3> kSchedules{
    {{ScheduleKind::constant, "constant"}, {ScheduleKind::step, "step"}, {ScheduleKind::cosine, "cosine"}}};
constexpr std::array<EnumName<PlacementMode>, 3> kPlacementModes{
    {{PlacementMode::auto_, "auto"}, {PlacementMode::local, "local"}, {PlacementMode::cloud, "cloud"}}};
constexpr std::array<EnumName<SpotMode>, 3> kSpotModes{
    {{SpotMode::auto_, "auto"}, {SpotMode::always, "always"}, {SpotMode::never, "never"}}};
constexpr std::array<EnumName<NodeLoss>, 2> kNodeLosses{
    {{NodeLoss::restart_gang, "restart_gang"}, {NodeLoss::replace_node, "replace_node"}}};
constexpr std::array<EnumName<ImagePull>, 3> kImagePulls{
    {{ImagePull::if_missing, "if_missing"}, {ImagePull::always, "always"}, {ImagePull::never, "never"}}};
constexpr std::array<EnumName<Precision>, 2> kPrecisions{{{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}}};
constexpr std::array<EnumName<WorkloadPrecision>, 3> kWorkloadPrecisions{
    {{WorkloadPrecision::fp32, "fp32"}, {WorkloadPrecision::bf16, "bf16"}, {WorkloadPrecision::fp16, "fp16"}}};
constexpr std::array<EnumName<WorkloadOptimizer>, 3> kWorkloadOptimizers{
    {{WorkloadOptimizer::adamw, "adamw"}, {WorkloadOptimizer::sgd, "sgd"}, {WorkloadOptimizer::adam8bit, "adam8bit"}}};
constexpr std::array<EnumName<Recompute>, 3> kRecomputes{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};

template <class E, size_t N>
std::string_view name_of(const std::array<EnumName<E>, N>& table, E v) {
  for (const auto& e : table)
    if (e.value == v) return e.name;
  return "unknown";
}

template <class E, size_t N>
std::string choices(const std::array<EnumName<E>, N>& table) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i) s += i + 1 == N ? " or " : ", ";
    s += "\"" + std::string(table[i].name) + "\"";
  }
  return s;
}

std::string number_text(double d) {
  std::string s;
  json::write_number(s, d);
  return s;
}

// Reads the members of one JSON object, remembering which keys were used, so that any key left
// over is reported as unknown. Each getter leaves `out` untouched when the key is absent.
class Fields {
 public:
  Fields(const Value& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  std::string field(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  const Value* take(std::string_view key) {
    used_.emplace_back(key);
    const Value* v = obj_.find(key);
    return v;
  }

  Status error(std::string_view key, std::string message) const {
    return make_error(ErrorCode::invalid_argument, field(key) + " " + message, field(key));
  }

  Status get_int(std::string_view key, int64_t& out, int64_t lo, int64_t hi) {
    const Value* v = take(key);
    if (!v) return ok_status();
    if (!v->is_integer())
      return error(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                            ", not " + std::string(json::type_name(v->type())));
    if (v->as_int() < lo || v->as_int() > hi)
      return error(key, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " +
                            std::to_string(v->as_int()) + ")");
    out = v->as_int();
    return ok_status();
  }

  Status get_int(std::string_view key, int& out, int lo, int hi) {
    int64_t wide = out;
    if (auto st = get_int(key, wide, lo, hi); !st) return st;
    out = static_cast<int>(wide);
    return ok_status();
  }

  Status get_seed(std::string_view key, uint64_t& out) {
    int64_t wide = static_cast<int64_t>(out);
    if (auto st = get_int(key, wide, 0, std::numeric_limits<int64_t>::max()); !st) return st;
    out = static_cast<uint64_t>(wide);
    return ok_status();
  }

  // A number in [lo, hi]; lo itself excluded when lo_open.
  Status get_number(std::string_view key, double& out, double lo, double hi, bool lo_open) {
    const Value* v = take(key);
    if (!v) return ok_status();
    const std::string range = std::string(lo_open ? "greater than " : "at least ") + number_text(lo) +
                              " and at most " + number_text(hi);
    if (!v->is_number())
      return error(key, "must be a number " + range + ", not " + std::string(json::type_name(v->type())));
    const double d = v->as_double();
    if ((lo_open ? d <= lo : d < lo) || d > hi) return error(key, "must be " + range + " (got " + number_text(d) + ")");
    out = d;
    return ok_status();
  }

  Status get_optional_number(std::string_view key, std::optional<double>& out, double hi) {
    const Value* v = obj_.find(key);
    if (v && v->is_null()) {
      take(key);
      out.reset();
      return ok_status();
    }
    double d = out.value_or(0);
    const bool present = v != nullptr;
    if (auto st = get_number(key, d, 0.0, hi, true); !st) return st;
    if (present) out = d;
    return ok_status();
  }

  Status get_bool(std::string_view key, bool& out) {
    const Value* v = take(key);
    if (!v) return ok_status();
    if (!v->is_bool()) return error(key, "must be true or false, not " + std::string(json::type_name(v->type())));
    out = v->as_bool();
    return ok_status();
  }

  Status get_string(std::string_view key, std::string& out, size_t max_len) {
    const Value* v = take(key);
    if (!v) return ok_status();
    if (!v->is_string()) return error(key, "must be a string, not " + std::string(json::type_name(v->type())));
    const auto& s = v->as_string();
    if (s.empty()) return error(key, "must not be empty");
    if (s.size() > max_len) return error(key, "must be at most " + std::to_string(max_len) + " bytes long");
    if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      return error(key, "must not contain control characters");
    out = s;
    return ok_status();
  }

  template <class E, size_t N>
  Status get_enum(std::string_view key, E& out, const std::array<EnumName<E>, N>& table, bool required) {
    const Value* v = take(key);
    if (!v) return required ? error(key, "is required (one of " + choices(table) + ")") : ok_status();
    if (v->is_string()) {
      for (const auto& e : table) {
        if (e.name == v->as_string()) {
          out = e.value;
          return ok_status();
        }
      }
    }
    return error(key, "must be one of " + choices(table) +
                          (v->is_string() ? " (got \"" + v->as_string() + "\")" : ""));
  }

  Status get_int_list(std::string_view key, std::vector<int>& out, size_t min_len, size_t max_len, int lo, int hi) {
    const Value* v = take(key);
    if (!v) return ok_status();
    if (!v->is_array()) return error(key, "must be an array of integers");
    const auto& arr = v->as_array();
    if (arr.size() < min_len || arr.size() > max_len)
      return error(key, "must have from " + std::to_string(min_len) + " to " + std::to_string(max_len) + " entries");
    std::vector<int> result;
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string item = std::string(key) + "[" + std::to_string(i) + "]";
      if (!arr[i].is_integer() || arr[i].as_int() < lo || arr[i].as_int() > hi)
        return make_error(ErrorCode::invalid_argument,
                          field(item) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi),
                          field(item));
      result.push_back(static_cast<int>(arr[i].as_int()));
    }
    out = std::move(result);
    return ok_status();
  }

  // A nested object: returns nullptr (and no error) when absent.
  Expected<const Value*> get_object(std::string_view key) {
    const Value* v = take(key);
    if (!v) return static_cast<const Value*>(nullptr);
    if (!v->is_object()) return Unexpected{error(key, "must be an object").error()};
    return v;
  }

  // Rejects keys not in `allowed` with a message naming what is valid here.
  Status reject(std::string_view key, std::string why) {
    if (obj_.find(key)) return error(key, std::move(why));
    return ok_status();
  }

  // Every key of the object must have been taken.
  Status finish() const {
    for (const auto& [k, v] : obj_.as_object()) {
      if (std::find(used_.begin(), used_.end(), k) == used_.end()) {
        std::string known;
        for (size_t i = 0; i < used_.size(); ++i) known += (i ? ", " : "") + used_[i];
        return error(k, "is not a known field (known here: " + known + ")");
      }
    }
    return ok_status();
  }

 private:
  const Value& obj_;
  std::string path_;
  std::vector<std::string> used_;
};

#define JOBCTL_TRY(expr)              \
  do {                                \
    if (auto st_ = (expr); !st_) {    \
      return Unexpected{st_.error()}; \
    }                                 \
  } while (0)

int isqrt_exact(int n) {
  const int r = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n))));
  return r * r == n ? r : 0;
}

Status parse_model(const Value& v, ModelSpec& m) {
  Fields f(v, "model");
  if (auto st = f.get_enum("kind", m.kind, kModelKinds, true); !st) return st;
  m.hidden = m.kind == ModelKind::mlp ? std::vector<int>{256, 128} : std::vector<int>{128};
  if (auto st = f.get_int_list("hidden", m.hidden, 0, 16, 1, 65536); !st) return st;
  if (auto st = f.get_enum("activation", m.activation, kActivations, false); !st) return st;
  if (m.kind == ModelKind::cnn) {
    m.channels = {32, 64};
    if (auto st = f.get_int_list("channels", m.channels, 1, 4, 1, 1024); !st) return st;
  } else if (auto st = f.reject("channels", "applies only to model.kind \"cnn\""); !st) {
    return st;
  }
  return f.finish();
}

Status parse_data(const Value& v, DataSpec& d) {
  Fields f(v, "data");
  if (auto st = f.get_enum("dataset", d.dataset, kDatasets, true); !st) return st;
  if (d.dataset == DatasetKind::fashion_mnist) {
    if (auto st = f.get_string("path", d.path, 4096); !st) return st;
    for (const char* k : {"samples", "test_samples", "features", "classes", "seed"})
      if (auto st = f.reject(k, "applies only to data.dataset \"synthetic\""); !st) return st;
  } else {
    if (auto st = f.reject("path", "applies only to data.dataset \"fashion-mnist\""); !st) return st;
    if (auto st = f.get_int("samples", d.samples, 1, 10'000'000); !st) return st;
    if (auto st = f.get_int("test_samples", d.test_samples, 1, 1'000'000); !st) return st;
    if (auto st = f.get_int("features", d.features, 1, 65536); !st) return st;
    if (auto st = f.get_int("classes", d.classes, 2, 1000); !st) return st;
    if (auto st = f.get_seed("seed", d.seed); !st) return st;
  }
  return f.finish();
}

Status parse_train(const Value& v, TrainSpec& t) {
  Fields f(v, "train");
  if (auto st = f.get_int("epochs", t.epochs, 1, 10000); !st) return st;
  if (auto st = f.get_int("batch_size", t.batch_size, 1, 65536); !st) return st;
  if (auto st = f.get_enum("optimizer", t.optimizer, kOptimizers, false); !st) return st;
  if (auto st = f.get_number("lr", t.lr, 0.0, 10.0, true); !st) return st;
  if (auto st = f.get_number("weight_decay", t.weight_decay, 0.0, 1.0, false); !st) return st;
  if (auto st = f.get_number("momentum", t.momentum, 0.0, 0.999999, false); !st) return st;
  if (auto st = f.get_number("beta1", t.beta1, 0.0, 0.999999, false); !st) return st;
  if (auto st = f.get_number("beta2", t.beta2, 0.0, 0.999999999, false); !st) return st;
  if (auto st = f.get_number("eps", t.eps, 0.0, 1.0, true); !st) return st;
  if (auto st = f.get_enum("schedule", t.schedule, kSchedules, false); !st) return st;
  if (auto st = f.get_int("step_epochs", t.step_epochs, 1, 10000); !st) return st;
  if (auto st = f.get_number("step_gamma", t.step_gamma, 0.0, 1.0, true); !st) return st;
  if (auto st = f.get_int("warmup_steps", t.warmup_steps, 0, 100'000'000); !st) return st;
  if (auto st = f.get_number("grad_clip", t.grad_clip, 0.0, 1e6, false); !st) return st;
  if (auto st = f.get_seed("seed", t.seed); !st) return st;
  if (auto st = f.get_enum("precision", t.precision, kPrecisions, false); !st) return st;
  if (auto st = f.get_int("accumulate_steps", t.accumulate_steps, 1, 1024); !st) return st;
  if (t.accumulate_steps > t.batch_size)
    return f.error("accumulate_steps", "must be at most train.batch_size (" + std::to_string(t.batch_size) +
                                           "): every micro-batch needs at least one sample");
  if (auto st = f.get_bool("recompute", t.recompute); !st) return st;
  return f.finish();
}

Status parse_checkpoint(const Value& v, CheckpointSpec& c) {
  Fields f(v, "checkpoint");
  if (auto st = f.get_int("every_steps", c.every_steps, 0, 1'000'000'000); !st) return st;
  if (auto st = f.get_number("every_seconds", c.every_seconds, 0.0, 1e7, false); !st) return st;
  if (auto st = f.get_int("keep", c.keep, 1, 100); !st) return st;
  if (auto st = f.get_number("grace_s", c.grace_s, 0.0, 3600.0, true); !st) return st;
  return f.finish();
}

bool valid_gpu_name(const std::string& gpu) {
  return std::all_of(gpu.begin(), gpu.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == ' ' || c == '.';
  });
}

Status parse_resources(const Value& v, ResourcesSpec& r) {
  Fields f(v, "resources");
  if (auto st = f.get_string("gpu", r.gpu, 64); !st) return st;
  if (!valid_gpu_name(r.gpu))
    return f.error("gpu", "must be \"any\", \"cpu\" or a GPU model name (letters, digits, space, '-', '_', '.')");
  if (const Value* g = v.find("gpus"); g && g->is_string()) {
    f.take("gpus");
    if (g->as_string() != "auto") return f.error("gpus", "must be an integer from 1 to 64 or \"auto\"");
    r.gpus_auto = true;
  } else if (auto st = f.get_int("gpus", r.gpus, 1, 64); !st) {
    return st;
  }
  if (r.gpu == "cpu" && r.gpus != 1) return f.error("gpus", "must be 1 when resources.gpu is \"cpu\"");
  if (auto st = f.get_int("memory_mb", r.memory_mb, 64, int64_t{1} << 30); !st) return st;
  if (auto st = f.get_int("nodes", r.nodes, 1, kMaxNodes); !st) return st;
  if (auto st = f.get_enum("on_node_loss", r.on_node_loss, kNodeLosses, false); !st) return st;
  if (r.on_node_loss != NodeLoss::restart_gang && r.nodes == 1)
    return f.error("on_node_loss", "is for a job on several machines (resources.nodes > 1)");
  return f.finish();
}

Status parse_placement(const Value& v, PlacementSpec& p) {
  Fields f(v, "placement");
  if (auto st = f.get_enum("mode", p.mode, kPlacementModes, false); !st) return st;
  if (auto st = f.get_enum("spot", p.spot, kSpotModes, false); !st) return st;
  if (auto st = f.get_optional_number("max_usd_per_hour", p.max_usd_per_hour, 1e6); !st) return st;
  if (auto st = f.get_optional_number("deadline_hours", p.deadline_hours, 1e6); !st) return st;
  if (auto st = f.get_bool("queue_if_unplaceable", p.queue_if_unplaceable); !st) return st;
  return f.finish();
}

Status parse_command(const Value* v, std::vector<std::string>& out) {
  auto bad = [](const std::string& field, const std::string& message) {
    return make_error(ErrorCode::invalid_argument, field + " " + message, field);
  };
  if (!v->is_array()) return bad("command", "must be an array of strings (the program and its arguments)");
  const auto& arr = v->as_array();
  if (arr.empty()) return bad("command", "must name a program (it is empty)");
  if (arr.size() > 1024) return bad("command", "must have at most 1024 entries");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string field = "command[" + std::to_string(i) + "]";
    if (!arr[i].is_string()) return bad(field, "must be a string, not " + std::string(json::type_name(arr[i].type())));
    const std::string& a = arr[i].as_string();
    if (a.size() > 8192) return bad(field, "must be at most 8192 bytes long");
    if (a.find('\0') != std::string::npos) return bad(field, "must not contain a NUL byte");
    if (i == 0 && a.empty()) return bad(field, "must name a program (it is empty)");
    out.push_back(a);
  }
  return ok_status();
}

Status parse_env(const Value* v, std::vector<std::pair<std::string, std::string>>& out) {
  if (!v->is_object())
    return make_error(ErrorCode::invalid_argument, "env must be an object of NAME: \"value\" strings", "env");
  if (v->as_object().size() > 256) return make_error(ErrorCode::invalid_argument, "env must have at most 256 entries", "env");
  for (const auto& [name, value] : v->as_object()) {
    const std::string field = "env." + name;
    const bool name_ok = !name.empty() && name.size() <= 128 && !(name[0] >= '0' && name[0] <= '9') &&
                         std::all_of(name.begin(), name.end(), [](char c) {
                           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                         });
    if (!name_ok)
      return make_error(ErrorCode::invalid_argument,
                        field + ": a variable name is letters, digits and '_', not starting with a digit", field);
    if (name.rfind("JOBCTL_", 0) == 0)
      return make_error(ErrorCode::invalid_argument, field + ": JOBCTL_ names are the job protocol's, set by the worker",
                        field);
    if (!value.is_string())
      return make_error(ErrorCode::invalid_argument, field + " must be a string, not " + std::string(json::type_name(value.type())),
                        field);
    if (value.as_string().size() > 8192 || value.as_string().find('\0') != std::string::npos)
      return make_error(ErrorCode::invalid_argument, field + " must be at most 8192 bytes, without NUL", field);
    out.emplace_back(name, value.as_string());
  }
  return ok_status();
}

// array: {"index": I, "parameters": {NAME: "value"}}, written by a sweep's expansion.
Status parse_array_case(const Value& v, ArrayCase& out) {
  Fields f(v, "array");
  if (auto st = f.get_int("index", out.index, 0, kMaxArrayCases - 1); !st) return st;
  if (const Value* params = f.take("parameters")) {
    if (!params->is_object())
      return make_error(ErrorCode::invalid_argument, "array.parameters must be an object of NAME: \"value\" strings",
                        "array.parameters");
    if (params->as_object().size() > kMaxSweepParameters)
      return make_error(ErrorCode::invalid_argument,
                        "array.parameters must have at most " + std::to_string(kMaxSweepParameters) + " entries",
                        "array.parameters");
    for (const auto& [name, value] : params->as_object()) {
      const std::string field = "array.parameters." + name;
      if (!is_sweep_parameter_name(name))
        return make_error(ErrorCode::invalid_argument, field + ": " + std::string(kSweepParameterNameRule), field);
      if (!value.is_string() || value.as_string().size() > 8192 || value.as_string().find('\0') != std::string::npos)
        return make_error(ErrorCode::invalid_argument, field + " must be a string of at most 8192 bytes, without NUL",
                          field);
      out.parameters.emplace_back(name, value.as_string());
    }
  }
  return f.finish();
}

// estimate.model: a transformer by shape (or by parameter count with the shape that sizes its
// activations), its training set-up and the work.
Status parse_transformer_workload(const Value& v, TransformerWorkload& m) {
  Fields f(v, "estimate.model");
  const bool by_parameters = v.find("parameters") != nullptr;
  for (const char* key : {"layers", "hidden", "heads"})
    if (!v.find(key)) return f.error(key, "is required (layers, hidden and heads size the activations)");
  if (!by_parameters && !v.find("vocab"))
    return f.error("vocab", "is required unless estimate.model.parameters gives the parameter count");
  if (auto st = f.get_int("layers", m.layers, 1, 4096); !st) return st;
  if (auto st = f.get_int("hidden", m.hidden, 1, 1 << 18); !st) return st;
  if (auto st = f.get_int("heads", m.heads, 1, 4096); !st) return st;
  if (m.hidden % m.heads != 0)
    return f.error("heads", "must divide estimate.model.hidden (" + std::to_string(m.hidden) + ")");
  if (auto st = f.get_int("vocab", m.vocab, 1, 1 << 24); !st) return st;
  if (auto st = f.get_int("parameters", m.parameters, 1, int64_t{100'000'000'000'000}); !st) return st;
  if (auto st = f.get_int("seq_len", m.seq_len, 1, 1 << 22); !st) return st;
  if (auto st = f.get_int("micro_batch", m.micro_batch, 1, 1 << 16); !st) return st;
  if (auto st = f.get_int("accumulate_steps", m.accumulate_steps, 1, 1 << 16); !st) return st;
  const bool has_tokens = v.find("tokens") != nullptr;
  const bool has_steps = v.find("steps") != nullptr;
  if (has_tokens == has_steps)
    return f.error(has_tokens ? "steps" : "tokens", has_tokens ? "cannot be given with estimate.model.tokens (give one)"
                                                                : "or estimate.model.steps is required (the work to train)");
  if (auto st = f.get_int("tokens", m.tokens, 1, int64_t{1} << 56); !st) return st;
  if (auto st = f.get_int("steps", m.steps, 1, int64_t{1} << 40); !st) return st;
  if (auto st = f.get_enum("precision", m.precision, kWorkloadPrecisions, false); !st) return st;
  if (auto st = f.get_enum("optimizer", m.optimizer, kWorkloadOptimizers, false); !st) return st;
  if (auto st = f.get_enum("recompute", m.recompute, kRecomputes, false); !st) return st;
  if (auto st = f.get_int("zero_stage", m.zero_stage, 0, 3); !st) return st;
  if (auto st = f.get_int("tensor_parallel", m.tensor_parallel, 1, 64); !st) return st;
  if (m.heads % m.tensor_parallel != 0)
    return f.error("tensor_parallel", "must divide estimate.model.heads (" + std::to_string(m.heads) + ")");
  return f.finish();
}

Status parse_setup(const Value* v, std::vector<std::string>& out) {
  auto bad = [](const std::string& field, const std::string& message) {
    return make_error(ErrorCode::invalid_argument, field + " " + message, field);
  };
  if (!v->is_array()) return bad("setup", "must be an array of shell commands (strings)");
  const auto& arr = v->as_array();
  if (arr.size() > 64) return bad("setup", "must have at most 64 commands");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string field = "setup[" + std::to_string(i) + "]";
    if (!arr[i].is_string()) return bad(field, "must be a string, not " + std::string(json::type_name(arr[i].type())));
    const std::string& c = arr[i].as_string();
    if (c.empty()) return bad(field, "must not be empty");
    if (c.size() > 8192) return bad(field, "must be at most 8192 bytes long");
    if (c.find('\0') != std::string::npos) return bad(field, "must not contain a NUL byte");
    out.push_back(c);
  }
  return ok_status();
}

// An absolute path without "." or ".." components, repeated or trailing slashes: what a mount
// names must be the folder it looks like.
bool plain_absolute_path(const std::string& p) {
  if (p.size() < 2 || p.front() != '/' || p.back() == '/' || p.size() > 1024) return false;
  if (p.find('\0') != std::string::npos || p.find("//") != std::string::npos) return false;
  for (size_t start = 1; start <= p.size();) {
    const size_t end = std::min(p.find('/', start), p.size());
    const std::string_view c = std::string_view(p).substr(start, end - start);
    if (c == "." || c == "..") return false;
    start = end + 1;
  }
  return true;
}

// `mounts`: [{"source": "/host/folder", "target": "/in/container", "writable": false}, ...].
Status parse_mounts(const Value* v, std::vector<MountSpec>& out) {
  auto bad = [](const std::string& field, const std::string& message) {
    return make_error(ErrorCode::invalid_argument, field + " " + message, field);
  };
  if (!v->is_array()) return bad("mounts", "must be an array of {source, target, writable} objects");
  const auto& arr = v->as_array();
  if (arr.size() > kMaxMounts) return bad("mounts", "must have at most " + std::to_string(kMaxMounts) + " entries");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "mounts[" + std::to_string(i) + "]";
    if (!arr[i].is_object()) return bad(at, "must be an object with source and target");
    Fields f(arr[i], at);
    MountSpec m;
    JOBCTL_TRY(f.get_string("source", m.source, 1024));
    JOBCTL_TRY(f.get_string("target", m.target, 1024));
    JOBCTL_TRY(f.get_bool("writable", m.writable));
    JOBCTL_TRY(f.finish());
    if (m.source.empty()) return bad(at + ".source", "is required (a folder on the worker's machine)");
    if (m.target.empty()) return bad(at + ".target", "is required (where the job sees it)");
    if (!plain_absolute_path(m.source))
      return bad(at + ".source", "must be an absolute path without '.', '..', '//' or a trailing '/'");
    if (!plain_absolute_path(m.target))
      return bad(at + ".target", "must be an absolute path without '.', '..', '//' or a trailing '/'");
    for (const std::string_view system : {"/proc", "/sys", "/dev"})
      if (path_within(m.target, system)) return bad(at + ".target", "must not be under " + std::string(system));
    for (const MountSpec& earlier : out)
      if (earlier.target == m.target) return bad(at + ".target", "is mounted twice (" + m.target + ")");
    out.push_back(std::move(m));
  }
  return ok_status();
}

// `after`: a list whose entries are a job id (12), an array id as the CLI writes it ("a12"), or
// an object {"job": 12} / {"array": 12} with an optional "condition" ("succeeded", the default,
// or "ended").
Status parse_after(const Value* v, std::vector<JobDependency>& out) {
  auto bad = [](const std::string& field, const std::string& message) {
    return make_error(ErrorCode::invalid_argument, field + " " + message, field);
  };
  if (!v->is_array())
    return bad("after", "must be a list of the jobs (12), arrays (\"a12\") or {\"job\": 12, \"condition\": \"ended\"} "
                        "that must end first");
  const auto& arr = v->as_array();
  if (arr.size() > kMaxDependencies) return bad("after", "must have at most " + std::to_string(kMaxDependencies) + " entries");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string field = "after[" + std::to_string(i) + "]";
    const Value& e = arr[i];
    JobDependency d;
    if (e.is_integer()) {
      d.id = e.as_int();
    } else if (e.is_string()) {
      const std::string& t = e.as_string();
      int64_t id = 0;
      const bool digits = t.size() > 1 && t.size() <= 19 && t[0] == 'a' &&
                          t.find_first_not_of("0123456789", 1) == std::string::npos;
      if (digits) id = std::stoll(t.substr(1));
      if (!digits || id < 1) return bad(field, "must be a job id (12) or an array id written a12 (got \"" + t.substr(0, 40) + "\")");
      d.array = true;
      d.id = id;
    } else if (e.is_object()) {
      Fields f(e, field);
      const bool job = e.find("job") != nullptr, array = e.find("array") != nullptr;
      if (job == array) return bad(field, "must name one job (\"job\": 12) or one array (\"array\": 12)");
      d.array = array;
      JOBCTL_TRY(f.get_int(array ? "array" : "job", d.id, 1, std::numeric_limits<int64_t>::max()));
      std::string condition = "succeeded";
      JOBCTL_TRY(f.get_string("condition", condition, 16));
      if (condition == "ended") {
        d.condition = DependencyCondition::ended;
      } else if (condition != "succeeded") {
        return bad(field + ".condition", "must be \"succeeded\" (the default) or \"ended\"");
      }
      JOBCTL_TRY(f.finish());
    } else {
      return bad(field, "must be a job id, an array id (\"a12\") or an object, not " + std::string(json::type_name(e.type())));
    }
    if (d.id < 1) return bad(field, "must name a job or array id of 1 or more");
    if (std::find(out.begin(), out.end(), d) != out.end()) return bad(field, "is listed twice");
    out.push_back(d);
  }
  return ok_status();
}

Status parse_estimate(const Value& v, RuntimeEstimate& e) {
  Fields f(v, "estimate");
  if (!v.find("hours") && !v.find("model"))
    return f.error("hours", "is required unless estimate.model describes the workload (the hours the job takes on estimate.gpu)");
  if (auto st = f.get_number("hours", e.hours, 0.0, 1e5, true); !st) return st;
  if (auto st = f.get_string("gpu", e.gpu, 64); !st) return st;
  if (!valid_gpu_name(e.gpu)) return f.error("gpu", "must be a GPU model name (letters, digits, space, '-', '_', '.')");
  auto model = f.get_object("model");
  if (!model) return model.error();
  if (*model) {
    TransformerWorkload m;
    if (auto st = parse_transformer_workload(**model, m); !st) return st;
    e.model = m;
  }
  return f.finish();
}

// Checks that need more than one section.
Status check_consistency(const JobSpec& s) {
  if (s.model.kind == ModelKind::cnn) {
    const InputShape in = input_shape(s.data);
    if (s.data.dataset == DatasetKind::synthetic && isqrt_exact(s.data.features) == 0)
      return make_error(ErrorCode::invalid_argument,
                        "data.features must be a perfect square (an SxS image) for model.kind \"cnn\"",
                        "data.features");
    int size = std::min(in.height, in.width);
    for (size_t i = 0; i < s.model.channels.size(); ++i) size /= 2;
    if (size < 1)
      return make_error(ErrorCode::invalid_argument,
                        "model.channels has too many blocks for a " + std::to_string(in.height) + "x" +
                            std::to_string(in.width) + " input (each block halves the size)",
                        "model.channels");
  }
  return ok_status();
}

Value int_array(const std::vector<int>& v) {
  json::Array a;
  for (int x : v) a.emplace_back(x);
  return Value(std::move(a));
}

Value optional_number(const std::optional<double>& v) { return v ? Value(*v) : Value(nullptr); }

Value model_json(const ModelSpec& m) {
  json::Object o{{"kind", Value(name_of(kModelKinds, m.kind))},
                 {"hidden", int_array(m.hidden)},
                 {"activation", Value(name_of(kActivations, m.activation))}};
  if (m.kind == ModelKind::cnn) o.emplace_back("channels", int_array(m.channels));
  return Value(std::move(o));
}

Value data_json(const DataSpec& d, bool with_path) {
  json::Object o{{"dataset", Value(name_of(kDatasets, d.dataset))}};
  if (d.dataset == DatasetKind::fashion_mnist) {
    if (with_path && !d.path.empty()) o.emplace_back("path", Value(d.path));
  } else {
    o.emplace_back("samples", Value(d.samples));
    o.emplace_back("test_samples", Value(d.test_samples));
    o.emplace_back("features", Value(d.features));
    o.emplace_back("classes", Value(d.classes));
    o.emplace_back("seed", Value(d.seed));
  }
  return Value(std::move(o));
}

// `for_fingerprint`: only what changes the computed values, and the fields added after the first
// release only when they differ from their defaults (so older specs keep their fingerprints).
Value train_json(const TrainSpec& t, bool for_fingerprint) {
  Value v(json::Object{
      {"epochs", Value(t.epochs)},
      {"batch_size", Value(t.batch_size)},
      {"optimizer", Value(name_of(kOptimizers, t.optimizer))},
      {"lr", Value(t.lr)},
      {"weight_decay", Value(t.weight_decay)},
      {"momentum", Value(t.momentum)},
      {"beta1", Value(t.beta1)},
      {"beta2", Value(t.beta2)},
      {"eps", Value(t.eps)},
      {"schedule", Value(name_of(kSchedules, t.schedule))},
      {"step_epochs", Value(t.step_epochs)},
      {"step_gamma", Value(t.step_gamma)},
      {"warmup_steps", Value(t.warmup_steps)},
      {"grad_clip", Value(t.grad_clip)},
      {"seed", Value(t.seed)},
  });
  json::Object& o = v.as_object();
  if (!for_fingerprint || t.precision != Precision::fp32)
    o.emplace_back("precision", Value(name_of(kPrecisions, t.precision)));
  if (!for_fingerprint || t.accumulate_steps != 1) o.emplace_back("accumulate_steps", Value(t.accumulate_steps));
  if (!for_fingerprint) o.emplace_back("recompute", Value(t.recompute));
  return v;
}

Value transformer_workload_json(const TransformerWorkload& m) {
  json::Object o{{"layers", Value(m.layers)}, {"hidden", Value(m.hidden)}, {"heads", Value(m.heads)}};
  if (m.vocab > 0) o.push_back({"vocab", Value(m.vocab)});
  if (m.parameters > 0) o.push_back({"parameters", Value(m.parameters)});
  o.push_back({"seq_len", Value(m.seq_len)});
  o.push_back({"micro_batch", Value(m.micro_batch)});
  o.push_back({"accumulate_steps", Value(m.accumulate_steps)});
  if (m.tokens > 0) o.push_back({"tokens", Value(m.tokens)});
  if (m.steps > 0) o.push_back({"steps", Value(m.steps)});
  o.push_back({"precision", Value(name_of(kWorkloadPrecisions, m.precision))});
  o.push_back({"optimizer", Value(name_of(kWorkloadOptimizers, m.optimizer))});
  o.push_back({"recompute", Value(name_of(kRecomputes, m.recompute))});
  o.push_back({"zero_stage", Value(m.zero_stage)});
  o.push_back({"tensor_parallel", Value(m.tensor_parallel)});
  return Value(std::move(o));
}

// queue_if_unplaceable only when set: specs without it keep their canonical form.
Value placement_json(const PlacementSpec& p) {
  json::Object o{{"mode", Value(name_of(kPlacementModes, p.mode))},
                 {"spot", Value(name_of(kSpotModes, p.spot))},
                 {"max_usd_per_hour", optional_number(p.max_usd_per_hour)},
                 {"deadline_hours", optional_number(p.deadline_hours)}};
  if (p.queue_if_unplaceable) o.push_back({"queue_if_unplaceable", Value(true)});
  return Value(std::move(o));
}

}  // namespace

Expected<JobSpec> parse_job_spec(std::string_view json_text) {
  auto parsed = json::parse(json_text);
  if (!parsed) return Unexpected{std::move(parsed).error()};
  const Value& root = *parsed;
  if (!root.is_object())
    return Unexpected{make_error(ErrorCode::invalid_argument, "the job spec must be a JSON object", "")};

  JobSpec spec;
  Fields f(root, "");
  JOBCTL_TRY(f.get_string("name", spec.name, 128));
  JOBCTL_TRY(f.reject("sweep", "stands for one job per case: submit it to POST /v1/arrays (jobctl submit and jobctl "
                               "launch do)"));
  // A command job: the user's program in place of model, data and train.
  const bool command_job = root.find("command") != nullptr;
  if (command_job) {
    JOBCTL_TRY(parse_command(f.take("command"), spec.command));
    for (const char* key : {"model", "data", "train"})
      JOBCTL_TRY(f.reject(key, "cannot be given with command (a command job runs its own program)"));
    if (const Value* env = f.take("env")) JOBCTL_TRY(parse_env(env, spec.env));
    if (const Value* setup = f.take("setup")) JOBCTL_TRY(parse_setup(setup, spec.setup));
    if (const Value* array = f.take("array")) {
      ArrayCase c;
      JOBCTL_TRY(parse_array_case(*array, c));
      spec.array = std::move(c);
    }
    if (const Value* b = f.take("bundle")) {
      const bool hex = b->is_string() && b->as_string().size() == 64 &&
                       b->as_string().find_first_not_of("0123456789abcdef") == std::string::npos;
      if (!hex)
        return Unexpected{make_error(ErrorCode::invalid_argument,
                                     "bundle must be the SHA-256 (64 lowercase hex digits) POST /v1/bundles returned",
                                     "bundle")};
      spec.bundle = b->as_string();
    }
    if (const Value* image = f.take("image")) {
      if (!image->is_string())
        return Unexpected{make_error(ErrorCode::invalid_argument,
                                     "image must be a string such as \"registry.example.com/team/train:1\"", "image")};
      auto ref = parse_image_reference(image->as_string());
      if (!ref) return Unexpected{std::move(ref).error()};
      spec.image = image->as_string();
      JOBCTL_TRY(f.get_enum("image_pull", spec.image_pull, kImagePulls, false));
      if (const Value* mounts = f.take("mounts")) JOBCTL_TRY(parse_mounts(mounts, spec.mounts));
      // setup runs on the worker's machine, not in the image: what the program needs belongs in it.
      JOBCTL_TRY(f.reject("setup", "cannot be given with image: setup runs on the worker's machine; install what "
                                   "the program needs into the image, or run it before the program in command"));
    } else {
      JOBCTL_TRY(f.reject("image_pull", "is only for a job in an image (give image)"));
      JOBCTL_TRY(f.reject("mounts", "is only for a job in an image (give image): a program on the worker's machine reads its folders directly"));
    }
    auto est = f.get_object("estimate");
    if (!est) return Unexpected{std::move(est).error()};
    if (*est) {
      RuntimeEstimate e;
      JOBCTL_TRY(parse_estimate(**est, e));
      spec.estimate = e;
    }
  } else {
    JOBCTL_TRY(f.reject("env", "is only for a command job (give command)"));
    JOBCTL_TRY(f.reject("setup", "is only for a command job (give command)"));
    JOBCTL_TRY(f.reject("bundle", "is only for a command job (give command)"));
    for (const char* key : {"image", "image_pull", "mounts"})
      JOBCTL_TRY(f.reject(key, "is only for a command job (give command): jobctl-train runs on the worker's machine; "
                               "to train in an image, run jobctl-train as the image's command (docs/job-spec.md)"));
    JOBCTL_TRY(f.reject("estimate", "is only for a command job (give command)"));
    JOBCTL_TRY(f.reject("array", "is only for a command job (a sweep runs a command)"));
  }

  struct Section {
    const char* key;
    bool required;
    Status (*parse)(const Value&, JobSpec&);
  };
  static constexpr Section kSections[] = {
      {"model", true, [](const Value& v, JobSpec& s) { return parse_model(v, s.model); }},
      {"data", true, [](const Value& v, JobSpec& s) { return parse_data(v, s.data); }},
      {"train", false, [](const Value& v, JobSpec& s) { return parse_train(v, s.train); }},
      {"checkpoint", false, [](const Value& v, JobSpec& s) { return parse_checkpoint(v, s.checkpoint); }},
      {"resources", false, [](const Value& v, JobSpec& s) { return parse_resources(v, s.resources); }},
      {"placement", false, [](const Value& v, JobSpec& s) { return parse_placement(v, s.placement); }},
  };
  for (const auto& section : kSections) {
    auto obj = f.get_object(section.key);
    if (!obj) return Unexpected{std::move(obj).error()};
    if (!*obj) {
      if (section.required && !command_job)
        return Unexpected{f.error(section.key, "is required").error()};
      continue;
    }
    JOBCTL_TRY(section.parse(**obj, spec));
  }
  JOBCTL_TRY(f.get_int("priority", spec.priority, 0, 100));
  if (const Value* after = f.take("after")) JOBCTL_TRY(parse_after(after, spec.after));
  JOBCTL_TRY(f.get_string("user", spec.user, 128));
  JOBCTL_TRY(f.finish());
  if (!command_job) JOBCTL_TRY(check_consistency(spec));
  // jobctl-train runs as one process; a program of the user's own spans machines.
  if (spec.resources.nodes > 1 && !command_job)
    return Unexpected{make_error(ErrorCode::invalid_argument,
                                 "resources.nodes must be 1 for a built-in model (jobctl-train runs on one machine); "
                                 "a command job may span machines",
                                 "resources.nodes")};
  if (spec.resources.nodes > 1 && spec.resources.gpus_auto)
    return Unexpected{make_error(ErrorCode::invalid_argument,
                                 "resources.gpus \"auto\" is for one machine; give the GPUs per node with resources.nodes",
                                 "resources.gpus")};
  if (spec.resources.gpus_auto && !(spec.estimate && spec.estimate->model))
    return Unexpected{make_error(ErrorCode::invalid_argument,
                                 "resources.gpus \"auto\" needs estimate.model (the workload whose memory decides the count)",
                                 "resources.gpus")};
  if (spec.estimate && spec.estimate->model && !spec.resources.gpus_auto &&
      spec.resources.gpus % spec.estimate->model->tensor_parallel != 0)
    return Unexpected{make_error(ErrorCode::invalid_argument,
                                 "estimate.model.tensor_parallel must divide resources.gpus (" +
                                     std::to_string(spec.resources.gpus) + ")",
                                 "estimate.model.tensor_parallel")};
  if (spec.name.empty() && command_job) {
    spec.name = command_job_name(spec.command);
  } else if (spec.name.empty()) {
    spec.name = std::string(to_string(spec.model.kind)) + "-" + std::string(to_string(spec.data.dataset));
  }
  return spec;
}

namespace {

std::string file_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Programs that run a script named among their arguments: the script is what the job is.
bool is_interpreter(std::string program) {
  // python3.11 -> python, pypy3 -> pypy
  while (!program.empty() && ((program.back() >= '0' && program.back() <= '9') || program.back() == '.'))
    program.pop_back();
  for (const char* known : {"python", "pypy", "bash", "sh", "zsh", "dash", "node", "ruby", "perl", "Rscript", "julia",
                            "torchrun", "deepspeed", "accelerate", "uv", "env"})
    if (program == known) return true;
  return false;
}

}  // namespace

std::string_view image_pull_name(ImagePull pull) { return name_of(kImagePulls, pull); }

std::string command_job_name(const std::vector<std::string>& command) {
  if (command.empty()) return "command";
  std::string name = file_name_of(command.front());
  if (is_interpreter(name)) {
    // The first argument that names a script or module: `python3 -u train.py` -> train.py,
    // `python3 -m pkg.train` -> pkg.train, `torchrun --nproc_per_node 2 train.py` -> train.py.
    for (size_t i = 1; i < command.size(); ++i) {
      const std::string& arg = command[i];
      if (arg == "-m" && i + 1 < command.size()) {
        name = command[i + 1];
        break;
      }
      if (arg.empty() || arg[0] == '-') continue;
      if (arg.find('.') == std::string::npos && arg.find('/') == std::string::npos) continue;  // an option's value
      name = file_name_of(arg);
      break;
    }
  }
  if (name.empty() || name.size() > 128) return "command";
  return name;
}

std::string to_json(const JobSpec& s) {
  // Fields added later appear only when not at their defaults, so that older specs keep their
  // canonical form.
  json::Object checkpoint{{"every_steps", Value(s.checkpoint.every_steps)},
                          {"every_seconds", Value(s.checkpoint.every_seconds)},
                          {"keep", Value(s.checkpoint.keep)}};
  if (s.checkpoint.grace_s != CheckpointSpec{}.grace_s) checkpoint.push_back({"grace_s", Value(s.checkpoint.grace_s)});
  json::Object resources{{"gpu", Value(s.resources.gpu)},
                         {"gpus", s.resources.gpus_auto ? Value("auto") : Value(s.resources.gpus)}};
  if (s.resources.memory_mb > 0) resources.push_back({"memory_mb", Value(s.resources.memory_mb)});
  if (s.resources.nodes != 1) resources.push_back({"nodes", Value(s.resources.nodes)});
  if (s.resources.on_node_loss != NodeLoss::restart_gang)
    resources.push_back({"on_node_loss", Value(name_of(kNodeLosses, s.resources.on_node_loss))});
  json::Object root{{"name", Value(s.name)}};
  if (s.is_command()) {
    json::Array command;
    for (const auto& a : s.command) command.push_back(Value(a));
    root.push_back({"command", Value(std::move(command))});
    if (!s.bundle.empty()) root.push_back({"bundle", Value(s.bundle)});
    if (!s.image.empty()) {
      root.push_back({"image", Value(s.image)});
      if (s.image_pull != ImagePull::if_missing) root.push_back({"image_pull", Value(name_of(kImagePulls, s.image_pull))});
      if (!s.mounts.empty()) {
        json::Array mounts;
        for (const MountSpec& m : s.mounts) {
          json::Object o{{"source", Value(m.source)}, {"target", Value(m.target)}};
          if (m.writable) o.push_back({"writable", Value(true)});
          mounts.push_back(Value(std::move(o)));
        }
        root.push_back({"mounts", Value(std::move(mounts))});
      }
    }
    if (!s.env.empty()) {
      json::Object env;
      for (const auto& [k, v] : s.env) env.push_back({k, Value(v)});
      root.push_back({"env", Value(std::move(env))});
    }
    if (s.array) {
      json::Object params;
      for (const auto& [k, v] : s.array->parameters) params.push_back({k, Value(v)});
      root.push_back({"array", Value(json::Object{{"index", Value(s.array->index)},
                                                  {"parameters", Value(std::move(params))}})});
    }
    if (!s.setup.empty()) {
      json::Array setup;
      for (const auto& c : s.setup) setup.push_back(Value(c));
      root.push_back({"setup", Value(std::move(setup))});
    }
    if (s.estimate) {
      json::Object e;
      if (s.estimate->hours > 0) e.push_back({"hours", Value(s.estimate->hours)});
      if (!s.estimate->gpu.empty()) e.push_back({"gpu", Value(s.estimate->gpu)});
      if (s.estimate->model) e.push_back({"model", transformer_workload_json(*s.estimate->model)});
      root.push_back({"estimate", Value(std::move(e))});
    }
  } else {
    root.push_back({"model", model_json(s.model)});
    root.push_back({"data", data_json(s.data, true)});
    root.push_back({"train", train_json(s.train, false)});
  }
  root.push_back({"checkpoint", Value(std::move(checkpoint))});
  root.push_back({"resources", Value(std::move(resources))});
  root.push_back({"placement", placement_json(s.placement)});
  root.push_back({"priority", Value(s.priority)});
  if (!s.after.empty()) {  // only when given: specs without it keep their canonical form
    json::Array after;
    for (const auto& d : s.after)
      after.push_back(Value(json::Object{{d.array ? "array" : "job", Value(d.id)},
                                         {"condition", Value(d.condition == DependencyCondition::ended ? "ended" : "succeeded")}}));
    root.push_back({"after", Value(std::move(after))});
  }
  if (!s.user.empty()) root.push_back({"user", Value(s.user)});
  return Value(std::move(root)).dump();
}

uint64_t training_fingerprint(const JobSpec& s) {
  const Value v(json::Object{
      {"model", model_json(s.model)}, {"data", data_json(s.data, false)}, {"train", train_json(s.train, true)}});
  const std::string text = v.dump();
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

int64_t training_steps(const JobSpec& spec) {
  if (spec.is_command()) return 0;  // a command job's steps are its own
  const int64_t samples = input_shape(spec.data).train_samples;
  const int64_t batch = std::max(1, spec.train.batch_size);
  return (samples + batch - 1) / batch * spec.train.epochs;
}

InputShape input_shape(const DataSpec& data) {
  InputShape in;
  if (data.dataset == DatasetKind::fashion_mnist) return in;  // 1x28x28, 10 classes, 60k/10k
  const int side = isqrt_exact(data.features);
  if (side > 0) {
    in.channels = 1;
    in.height = in.width = side;
  } else {
    in.channels = data.features;
    in.height = in.width = 1;
  }
  in.classes = data.classes;
  in.train_samples = data.samples;
  in.test_samples = data.test_samples;
  return in;
}

std::string_view to_string(ModelKind v) { return name_of(kModelKinds, v); }
std::string_view to_string(Activation v) { return name_of(kActivations, v); }
std::string_view to_string(DatasetKind v) { return name_of(kDatasets, v); }
std::string_view to_string(OptimizerKind v) { return name_of(kOptimizers, v); }
std::string_view to_string(ScheduleKind v) { return name_of(kSchedules, v); }
std::string_view to_string(PlacementMode v) { return name_of(kPlacementModes, v); }
std::string_view to_string(SpotMode v) { return name_of(kSpotModes, v); }
std::string_view to_string(NodeLoss v) { return name_of(kNodeLosses, v); }
std::string_view to_string(Precision v) { return name_of(kPrecisions, v); }
std::string_view to_string(WorkloadPrecision v) { return name_of(kWorkloadPrecisions, v); }
std::string_view to_string(WorkloadOptimizer v) { return name_of(kWorkloadOptimizers, v); }
std::string_view to_string(Recompute v) { return name_of(kRecomputes, v); }

bool operator==(const ModelSpec& a, const ModelSpec& b) {
  return a.kind == b.kind && a.hidden == b.hidden && a.activation == b.activation && a.channels == b.channels;
}
bool operator==(const DataSpec& a, const DataSpec& b) {
  if (a.dataset != b.dataset) return false;
  if (a.dataset == DatasetKind::fashion_mnist) return a.path == b.path;
  return a.samples == b.samples && a.test_samples == b.test_samples && a.features == b.features &&
         a.classes == b.classes && a.seed == b.seed;
}
bool operator==(const TrainSpec& a, const TrainSpec& b) {
  return a.epochs == b.epochs && a.batch_size == b.batch_size && a.optimizer == b.optimizer && a.lr == b.lr &&
         a.weight_decay == b.weight_decay && a.momentum == b.momentum && a.beta1 == b.beta1 && a.beta2 == b.beta2 &&
         a.eps == b.eps && a.schedule == b.schedule && a.step_epochs == b.step_epochs &&
         a.step_gamma == b.step_gamma && a.warmup_steps == b.warmup_steps && a.grad_clip == b.grad_clip &&
         a.seed == b.seed && a.precision == b.precision && a.accumulate_steps == b.accumulate_steps &&
         a.recompute == b.recompute;
}
bool operator==(const CheckpointSpec& a, const CheckpointSpec& b) {
  return a.every_steps == b.every_steps && a.every_seconds == b.every_seconds && a.keep == b.keep &&
         a.grace_s == b.grace_s;
}
bool operator==(const ResourcesSpec& a, const ResourcesSpec& b) {
  return a.gpu == b.gpu && a.gpus == b.gpus && a.gpus_auto == b.gpus_auto && a.memory_mb == b.memory_mb &&
         a.nodes == b.nodes;
}
bool operator==(const RuntimeEstimate& a, const RuntimeEstimate& b) {
  return a.hours == b.hours && a.gpu == b.gpu && a.model == b.model;
}
bool operator==(const TransformerWorkload& a, const TransformerWorkload& b) {
  return a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads && a.vocab == b.vocab &&
         a.parameters == b.parameters && a.seq_len == b.seq_len && a.micro_batch == b.micro_batch &&
         a.accumulate_steps == b.accumulate_steps && a.tokens == b.tokens && a.steps == b.steps &&
         a.precision == b.precision && a.optimizer == b.optimizer && a.recompute == b.recompute &&
         a.zero_stage == b.zero_stage && a.tensor_parallel == b.tensor_parallel;
}
bool operator==(const PlacementSpec& a, const PlacementSpec& b) {
  return a.mode == b.mode && a.spot == b.spot && a.max_usd_per_hour == b.max_usd_per_hour &&
         a.deadline_hours == b.deadline_hours && a.queue_if_unplaceable == b.queue_if_unplaceable;
}
bool operator==(const ArrayCase& a, const ArrayCase& b) {
  return a.index == b.index && a.parameters == b.parameters;
}

bool operator==(const JobSpec& a, const JobSpec& b) {
  return a.name == b.name && a.command == b.command && a.array == b.array && a.bundle == b.bundle && a.image == b.image && a.image_pull == b.image_pull && a.mounts == b.mounts && a.env == b.env && a.setup == b.setup && a.estimate == b.estimate && a.model == b.model && a.data == b.data && a.train == b.train &&
         a.checkpoint == b.checkpoint && a.resources == b.resources && a.placement == b.placement &&
         a.priority == b.priority && a.after == b.after && a.user == b.user;
}

}  // namespace jobctl::train
