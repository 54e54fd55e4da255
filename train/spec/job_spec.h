// The job spec: one JSON document that the API, the CLI, the dashboard form and jobctl-train all
// take (docs/job-spec.md documents every field and default).
//
// This is the single parser and validator of that document. It lives in train/ because train/
// must build alone (standard library only) and jobctl-train reads specs; the daemon and the CLI
// call the same functions, so a spec the daemon accepts is exactly a spec the trainer can run.
//
// Rules: everything but `model` and `data` (or, for a command job, `command`) has a default; unknown keys anywhere are an error; every
// error names the offending field by its dotted path ("train.epochs", "model.hidden[1]").
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "train/spec/transformer_workload.h"

namespace jobctl::train {

enum class ModelKind { mlp, cnn };
enum class Activation { relu, gelu };
enum class DatasetKind { fashion_mnist, synthetic };
enum class OptimizerKind { sgd, adamw };
enum class ScheduleKind { constant, step, cosine };
enum class PlacementMode { auto_, local, cloud };
enum class SpotMode { auto_, always, never };
// What a gang does when one of its nodes other than rank 0 is lost (its worker silent, its machine
// gone or given back): stop and restart every node from the newest checkpoint, or lease only a
// replacement for that node while the others go on (a program that re-forms its group, such as
// torchrun's elastic agent: docs/job-spec.md, "Jobs across machines").
enum class NodeLoss { restart_gang, replace_node };
// The number format of the matrix products: fp32, or bf16 operands with fp32 accumulation (the
// weights, gradients and optimizer state stay fp32; docs/job-spec.md).
enum class Precision { fp32, bf16 };
// When the worker pulls a job's image: only when it does not hold it, before every start, or
// never (the image must already be on the worker).
enum class ImagePull { if_missing, always, never };

// The model. MLP: dense(hidden[i]) + activation for each i, then dense(classes).
// CNN: for each c in channels: conv 3x3 (stride 1, pad 1, c filters) + ReLU + max-pool 2x2
// (stride 2); flatten; dense(hidden[i]) + activation for each i; then dense(classes).
struct ModelSpec {
  ModelKind kind = ModelKind::mlp;
  std::vector<int> hidden;     // sizes of the hidden dense layers (may be empty)
  Activation activation = Activation::relu;
  std::vector<int> channels;   // CNN only: filters per conv block (at least one)
};

// The data. fashion-mnist: 60,000 training and 10,000 test images of 1x28x28, 10 classes, read
// from `path` (default /usr/share/datasets/fashion-mnist, overridable by jobctl-train --data-dir).
// synthetic: `samples` training samples (plus test_samples) of `features` floats in `classes`
// classes, generated from `seed`; a CNN treats features as a square 1xSxS image.
struct DataSpec {
  DatasetKind dataset = DatasetKind::fashion_mnist;
  std::string path;            // empty: the default location
  int64_t samples = 10000;     // synthetic only
  int64_t test_samples = 2000; // synthetic only
  int features = 64;           // synthetic only
  int classes = 10;            // synthetic only
  uint64_t seed = 1;           // synthetic only
};

struct TrainSpec {
  int epochs = 10;
  int batch_size = 128;
  OptimizerKind optimizer = OptimizerKind::adamw;
  double lr = 0.001;
  double weight_decay = 0.0001;
  double momentum = 0.9;       // SGD only
  double beta1 = 0.9;          // AdamW only
  double beta2 = 0.999;        // AdamW only
  double eps = 1e-8;           // AdamW only
  ScheduleKind schedule = ScheduleKind::cosine;
  int step_epochs = 3;         // step schedule: multiply lr by step_gamma every step_epochs
  double step_gamma = 0.1;
  int warmup_steps = 0;        // linear warm-up before the schedule
  double grad_clip = 0.0;      // global L2 norm clip; 0 disables
  uint64_t seed = 42;          // initialisation, shuffling and every other random choice
  Precision precision = Precision::fp32;
  int accumulate_steps = 1;    // micro-batches per optimizer step (batch_size is split among them)
  bool recompute = false;      // drop activations in the forward pass, recompute them in backward
};

// Samples in one micro-batch: ceil(batch_size / accumulate_steps), what a forward pass holds.
inline int micro_batch_size(const TrainSpec& t) {
  return (t.batch_size + t.accumulate_steps - 1) / t.accumulate_steps;
}

struct CheckpointSpec {
  int every_steps = 500;       // 0 disables step-based checkpoints
  double every_seconds = 0.0;  // 0 disables time-based checkpoints
  int keep = 3;                // how many periodic checkpoints to keep (>= 1)
  double grace_s = 30.0;       // after SIGTERM, how long the program may take to exit before SIGKILL
};

struct ResourcesSpec {
  std::string gpu = "any";     // "any", "cpu" (no GPU needed) or a GPU model such as "A100"
  int gpus = 1;
  // "gpus": "auto" (a command job with estimate.model): placement picks, per GPU model, the
  // smallest count whose memory per GPU holds the workload; `gpus` is then 1.
  bool gpus_auto = false;
  int64_t memory_mb = 0;       // the program's address-space limit (RLIMIT_AS); 0: none
  // Machines the job runs on at once (a gang: docs/job-spec.md, "Jobs across machines"), each with
  // `gpus` of `gpu`; more than 1 only for a command job. All nodes are leased together or none.
  int nodes = 1;
  NodeLoss on_node_loss = NodeLoss::restart_gang;  // a gang's (nodes > 1) only
};

// The most machines one gang may span.
inline constexpr int kMaxNodes = 64;

// A command job's runtime hint: about `hours` on one `gpu` (a GPU model; empty: any), and/or the
// workload as a transformer (`model`), from which the cost model estimates memory and compute.
// hours = 0 only with a model.
struct RuntimeEstimate {
  double hours = 0;
  std::string gpu;
  std::optional<TransformerWorkload> model;
};

// One case of a sweep (a job array, docs/task-files.md "Sweeps"): its index in the array and its
// parameters by name, values as text. The worker gives the program JOBCTL_ARRAY_INDEX and one
// JOBCTL_PARAM_<NAME> (the name upper-cased) per parameter. Set by the sweep's expansion
// (job_sweep.h); a command job's only.
struct ArrayCase {
  int index = 0;
  std::vector<std::pair<std::string, std::string>> parameters;
};

// A dependency (docs/job-spec.md, "Dependencies"): the job is not placed until the job it names
// (or every job of the array it names) has ended — `succeeded`: succeeded; `ended`: in any way.
// When a `succeeded` dependency can no longer hold (a job of it failed or was cancelled), the job
// is cancelled, saying which.
enum class DependencyCondition { succeeded, ended };

struct JobDependency {
  bool array = false;  // `id` names a job array (a sweep), else a job
  int64_t id = 0;
  DependencyCondition condition = DependencyCondition::succeeded;
  bool operator==(const JobDependency&) const = default;
};

// At most this many dependencies per job.
inline constexpr size_t kMaxDependencies = 64;

struct PlacementSpec {
  PlacementMode mode = PlacementMode::auto_;
  SpotMode spot = SpotMode::auto_;
  std::optional<double> max_usd_per_hour;  // absent: no cap
  std::optional<double> deadline_hours;    // absent: no deadline
  bool queue_if_unplaceable = false;       // accept it even when no machine could run it now
};

// A host folder a job in an image sees (docs/job-spec.md, "Images"): `source` on the worker's
// machine, at `target` inside the container, read-only unless `writable`. A worker mounts only
// folders under the prefixes its operator allows (--allow-mount).
struct MountSpec {
  std::string source;
  std::string target;
  bool writable = false;
  bool operator==(const MountSpec&) const = default;
};

// At most this many mounts per job.
inline constexpr size_t kMaxMounts = 32;

struct JobSpec {
  std::string name;            // default: "<model kind>-<dataset>"; a command job: command_job_name()
  // A command job (docs/job-protocol.md): the user's own program and its arguments, run in place
  // of jobctl-train; `model`, `data` and `train` are then not given. Empty: a built-in model.
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;  // a command job's extra environment
  // A command job's setup: shell commands run, in order, in the job's folder before its program
  // (installing what it needs). Recorded and validated; the worker does not run them yet.
  std::vector<std::string> setup;
  std::optional<RuntimeEstimate> estimate;                // a command job's runtime hint
  std::optional<ArrayCase> array;                         // a sweep's case: absent for a lone job
  std::string bundle;  // a command job's code bundle: the SHA-256 (64 hex) POST /v1/bundles named; "" none
  // A command job's container image (train/spec/image_reference.h): "" runs the program on the
  // worker's machine as it is. `mounts` only with an image.
  std::string image;
  ImagePull image_pull = ImagePull::if_missing;
  std::vector<MountSpec> mounts;
  bool is_command() const { return !command.empty(); }
  ModelSpec model;
  DataSpec data;
  TrainSpec train;
  CheckpointSpec checkpoint;
  ResourcesSpec resources;
  PlacementSpec placement;
  int priority = 50;           // 0..100, higher runs first
  std::vector<JobDependency> after;  // what must have ended first; empty: nothing
  std::string user;            // optional: who the job is for (spend by user); "" = none. With
                               // auth on, the daemon records the token's user instead.
};

// Parses and validates a spec from JSON text. Errors carry code "invalid_argument" (or
// "malformed_json" when the text is not JSON), a message, and the dotted field path.
[[nodiscard]] Expected<JobSpec> parse_job_spec(std::string_view json_text);

// A command job's default name: the script an interpreter runs (`python3 train.py` -> "train.py",
// `python3 -m pkg.train` -> "pkg.train"), else the program's file name; "command" when that is
// empty or longer than a name may be.
std::string command_job_name(const std::vector<std::string>& command);

// "if_missing", "always" or "never".
std::string_view image_pull_name(ImagePull pull);

// The canonical JSON of a spec: every field present with its effective value, keys in a fixed
// order, no insignificant white space. parse_job_spec(to_json(s)) == s, and the daemon stores this.
std::string to_json(const JobSpec& spec);

// A 64-bit fingerprint (FNV-1a over the canonical JSON of model, data and train) of everything
// that determines the training trajectory. A checkpoint records it; resuming under a spec with a
// different fingerprint is refused. Checkpoint cadence, resources, placement and priority do not
// enter it: they change where and how often, not what is computed. Neither does train.recompute
// (its results are bit-identical), and train.precision / train.accumulate_steps enter it only when
// not at their defaults, so specs written before they existed keep their fingerprints.
uint64_t training_fingerprint(const JobSpec& spec);

// The optimizer steps a whole run takes: ceil(training samples / batch size) per epoch, times
// the epochs. A checkpoint's step is never beyond it.
int64_t training_steps(const JobSpec& spec);

// Stable names used in JSON, logs and tables.
std::string_view to_string(ModelKind);
std::string_view to_string(Activation);
std::string_view to_string(DatasetKind);
std::string_view to_string(OptimizerKind);
std::string_view to_string(ScheduleKind);
std::string_view to_string(PlacementMode);
std::string_view to_string(SpotMode);
std::string_view to_string(NodeLoss);
std::string_view to_string(Precision);

// Input geometry the data spec implies: channels x height x width (height = width = 1 and
// channels = features for non-image synthetic data used by an MLP) and the number of classes.
struct InputShape {
  int channels = 1;
  int height = 28;
  int width = 28;
  int classes = 10;
  int64_t train_samples = 60000;
  int64_t test_samples = 10000;
  int features() const { return channels * height * width; }
};
InputShape input_shape(const DataSpec& data);

bool operator==(const ModelSpec&, const ModelSpec&);
bool operator==(const DataSpec&, const DataSpec&);
bool operator==(const TrainSpec&, const TrainSpec&);
bool operator==(const CheckpointSpec&, const CheckpointSpec&);
bool operator==(const ResourcesSpec&, const ResourcesSpec&);
bool operator==(const PlacementSpec&, const PlacementSpec&);
bool operator==(const RuntimeEstimate&, const RuntimeEstimate&);
bool operator==(const ArrayCase&, const ArrayCase&);
bool operator==(const JobSpec&, const JobSpec&);

}  // namespace jobctl::train
