#include "train/spec/job_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jobctl::train {
namespace {

// The example from docs/architecture.md, verbatim.
constexpr const char* kDesignExample = R"({
  "name": "fmnist-mlp",
  "model": {"kind": "mlp", "hidden": [256, 128], "activation": "relu"},
  "data": {"dataset": "fashion-mnist"},
  "train": {"epochs": 10, "batch_size": 128, "optimizer": "adamw", "lr": 0.001,
            "weight_decay": 0.0001, "schedule": "cosine", "seed": 42},
  "checkpoint": {"every_steps": 500, "keep": 3},
  "resources": {"gpu": "any", "gpus": 1},
  "placement": {"mode": "auto", "spot": "auto", "max_usd_per_hour": 4.0, "deadline_hours": 6},
  "priority": 50
})";

Error parse_error(const std::string& text) {
  auto r = parse_job_spec(text);
  EXPECT_FALSE(r) << "accepted: " << text;
  return r ? Error{} : r.error();
}

// A spec with one section replaced, to probe a single field.
std::string with(const std::string& section_json) {
  return R"({"model": {"kind": "mlp"}, "data": {"dataset": "fashion-mnist"}, )" + section_json + "}";
}

TEST(JobSpec, ParsesTheDesignExample) {
  auto r = parse_job_spec(kDesignExample);
  ASSERT_TRUE(r) << r.error().message;
  const JobSpec& s = *r;
  EXPECT_EQ(s.name, "fmnist-mlp");
  EXPECT_EQ(s.model.kind, ModelKind::mlp);
  EXPECT_EQ(s.model.hidden, (std::vector<int>{256, 128}));
  EXPECT_EQ(s.data.dataset, DatasetKind::fashion_mnist);
  EXPECT_EQ(s.train.epochs, 10);
  EXPECT_EQ(s.train.optimizer, OptimizerKind::adamw);
  EXPECT_DOUBLE_EQ(s.train.lr, 0.001);
  EXPECT_EQ(s.train.seed, 42u);
  EXPECT_EQ(s.checkpoint.keep, 3);
  EXPECT_EQ(s.resources.gpu, "any");
  ASSERT_TRUE(s.placement.max_usd_per_hour);
  EXPECT_DOUBLE_EQ(*s.placement.max_usd_per_hour, 4.0);
  ASSERT_TRUE(s.placement.deadline_hours);
  EXPECT_DOUBLE_EQ(*s.placement.deadline_hours, 6.0);
  EXPECT_EQ(s.priority, 50);
}

TEST(JobSpec, EverythingButModelAndDataHasADefault) {
  auto r = parse_job_spec(R"({"model": {"kind": "cnn"}, "data": {"dataset": "fashion-mnist"}})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "cnn-fashion-mnist");
  EXPECT_EQ(r->model.channels, (std::vector<int>{32, 64}));
  EXPECT_EQ(r->model.hidden, (std::vector<int>{128}));
  EXPECT_EQ(r->train.epochs, 10);
  EXPECT_EQ(r->train.batch_size, 128);
  EXPECT_EQ(r->checkpoint.every_steps, 500);
  EXPECT_FALSE(r->placement.deadline_hours);
  EXPECT_EQ(r->priority, 50);

  EXPECT_EQ(parse_error(R"({"data": {"dataset": "fashion-mnist"}})").field, "model");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp"}})").field, "data");
  EXPECT_EQ(parse_error(R"({"model": {}, "data": {"dataset": "fashion-mnist"}})").field, "model.kind");
}

TEST(JobSpec, CanonicalJsonRoundTrips) {
  for (const char* text :
       {kDesignExample,
        R"({"model": {"kind": "cnn", "channels": [8], "hidden": [], "activation": "gelu"},
            "data": {"dataset": "synthetic", "samples": 500, "features": 49, "classes": 3, "seed": 9},
            "train": {"optimizer": "sgd", "momentum": 0.5, "schedule": "step", "grad_clip": 1.5},
            "placement": {"deadline_hours": null}})",
        R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"},
            "placement": {"queue_if_unplaceable": true}})"}) {
    auto a = parse_job_spec(text);
    ASSERT_TRUE(a) << a.error().message;
    const std::string canonical = to_json(*a);
    auto b = parse_job_spec(canonical);
    ASSERT_TRUE(b) << b.error().message << "\n" << canonical;
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(canonical, to_json(*b));
  }
}

// placement.queue_if_unplaceable: false by default and then absent from the canonical form (so
// the specs stored before it existed keep theirs); true is kept.
TEST(JobSpec, QueueIfUnplaceable) {
  auto plain = parse_job_spec(R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"}})");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->placement.queue_if_unplaceable);
  EXPECT_EQ(to_json(*plain).find("queue_if_unplaceable"), std::string::npos);
  auto waits = parse_job_spec(R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"},
                                  "placement": {"queue_if_unplaceable": true}})");
  ASSERT_TRUE(waits);
  EXPECT_TRUE(waits->placement.queue_if_unplaceable);
  EXPECT_NE(to_json(*waits).find("\"queue_if_unplaceable\":true"), std::string::npos);
  EXPECT_EQ(parse_error(with(R"("placement": {"queue_if_unplaceable": "yes"})")).field, "placement.queue_if_unplaceable");
}

TEST(JobSpec, UnknownKeysAreErrorsAtEveryLevel) {
  EXPECT_EQ(parse_error(with(R"("colour": "red")")).field, "colour");
  EXPECT_EQ(parse_error(with(R"("train": {"epoch": 3})")).field, "train.epoch");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp", "layers": 2}, "data": {"dataset": "fashion-mnist"}})").field,
            "model.layers");
  EXPECT_EQ(parse_error(with(R"("placement": {"region": "x"})")).field, "placement.region");
  const Error e = parse_error(with(R"("train": {"epoch": 3})"));
  EXPECT_NE(e.message.find("not a known field"), std::string::npos);
  EXPECT_NE(e.message.find("epochs"), std::string::npos);  // says what is known
}

TEST(JobSpec, WrongTypesNameTheField) {
  EXPECT_EQ(parse_error(with(R"("train": {"epochs": "3"})")).field, "train.epochs");
  EXPECT_EQ(parse_error(with(R"("train": {"epochs": 2.5})")).field, "train.epochs");
  EXPECT_EQ(parse_error(with(R"("train": {"lr": "fast"})")).field, "train.lr");
  EXPECT_EQ(parse_error(with(R"("train": [])")).field, "train");
  EXPECT_EQ(parse_error(with(R"("priority": true)")).field, "priority");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp", "hidden": [64, "x"]}, "data": {"dataset": "fashion-mnist"}})")
                .field,
            "model.hidden[1]");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "rnn"}, "data": {"dataset": "fashion-mnist"}})").field, "model.kind");
  EXPECT_EQ(parse_error("[1, 2]").code, ErrorCode::invalid_argument);
  EXPECT_EQ(parse_error("{not json").code, ErrorCode::malformed_json);
}

TEST(JobSpec, RangesAreChecked) {
  EXPECT_EQ(parse_error(with(R"("train": {"epochs": -1})")).field, "train.epochs");
  EXPECT_EQ(parse_error(with(R"("train": {"epochs": 0})")).field, "train.epochs");
  EXPECT_EQ(parse_error(with(R"("train": {"batch_size": 0})")).field, "train.batch_size");
  EXPECT_EQ(parse_error(with(R"("train": {"lr": 0})")).field, "train.lr");
  EXPECT_EQ(parse_error(with(R"("train": {"seed": -5})")).field, "train.seed");
  EXPECT_EQ(parse_error(with(R"("checkpoint": {"keep": 0})")).field, "checkpoint.keep");
  EXPECT_EQ(parse_error(with(R"("placement": {"max_usd_per_hour": 0})")).field, "placement.max_usd_per_hour");
  EXPECT_EQ(parse_error(with(R"("placement": {"deadline_hours": -2})")).field, "placement.deadline_hours");
  EXPECT_EQ(parse_error(with(R"("priority": 101)")).field, "priority");
  EXPECT_EQ(parse_error(with(R"("name": "")")).field, "name");
  EXPECT_EQ(parse_error(with(R"("name": "a\nb")")).field, "name");
  EXPECT_EQ(parse_error(with(R"("resources": {"gpu": "cpu", "gpus": 2})")).field, "resources.gpus");
  EXPECT_EQ(parse_error(with(R"("resources": {"gpu": "A100;rm"})")).field, "resources.gpu");
  const Error e = parse_error(with(R"("train": {"epochs": -3})"));
  EXPECT_NE(e.message.find("-3"), std::string::npos) << e.message;
}

TEST(JobSpec, FieldsOfAnotherKindAreRejected) {
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp", "channels": [8]}, "data": {"dataset": "fashion-mnist"}})").field,
            "model.channels");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp"}, "data": {"dataset": "fashion-mnist", "samples": 5}})").field,
            "data.samples");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic", "path": "/x"}})").field,
            "data.path");
}

TEST(JobSpec, CnnNeedsAnImageBigEnoughForItsBlocks) {
  EXPECT_EQ(parse_error(R"({"model": {"kind": "cnn"}, "data": {"dataset": "synthetic", "features": 50}})").field,
            "data.features");
  EXPECT_EQ(
      parse_error(R"({"model": {"kind": "cnn", "channels": [4, 4, 4]}, "data": {"dataset": "synthetic", "features": 16}})")
          .field,
      "model.channels");
  EXPECT_TRUE(parse_job_spec(
      R"({"model": {"kind": "cnn", "channels": [4, 4, 4, 4]}, "data": {"dataset": "fashion-mnist"}})"));
}

TEST(JobSpec, InputShapes) {
  DataSpec fm;
  EXPECT_EQ(input_shape(fm).features(), 784);
  EXPECT_EQ(input_shape(fm).train_samples, 60000);
  DataSpec syn;
  syn.dataset = DatasetKind::synthetic;
  syn.features = 64;
  syn.classes = 4;
  EXPECT_EQ(input_shape(syn).height, 8);
  EXPECT_EQ(input_shape(syn).classes, 4);
  syn.features = 10;
  EXPECT_EQ(input_shape(syn).channels, 10);
  EXPECT_EQ(input_shape(syn).height, 1);
}

TEST(JobSpec, FingerprintFollowsWhatIsComputedOnly) {
  auto a = parse_job_spec(kDesignExample);
  ASSERT_TRUE(a);
  JobSpec b = *a;
  b.checkpoint.every_steps = 7;
  b.priority = 1;
  b.placement.spot = SpotMode::never;
  b.data.path = "/elsewhere";
  EXPECT_EQ(training_fingerprint(*a), training_fingerprint(b));
  b.train.seed = 43;
  EXPECT_NE(training_fingerprint(*a), training_fingerprint(b));
  JobSpec c = *a;
  c.model.hidden = {256, 64};
  EXPECT_NE(training_fingerprint(*a), training_fingerprint(c));
}

TEST(JobSpec, PrecisionAccumulationAndRecompute) {
  auto d = parse_job_spec(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"}})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->train.precision, Precision::fp32);
  EXPECT_EQ(d->train.accumulate_steps, 1);
  EXPECT_FALSE(d->train.recompute);
  auto s = parse_job_spec(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"},
      "train":{"precision":"bf16","batch_size":100,"accumulate_steps":3,"recompute":true}})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->train.precision, Precision::bf16);
  EXPECT_EQ(s->train.accumulate_steps, 3);
  EXPECT_EQ(micro_batch_size(s->train), 34);
  EXPECT_TRUE(s->train.recompute);
  EXPECT_EQ(*parse_job_spec(to_json(*s)), *s);
  for (const char* bad : {R"("precision":"fp16")", R"("precision":16)", R"("accumulate_steps":0)",
                          R"("accumulate_steps":2000)", R"("accumulate_steps":1.5)", R"("recompute":"yes")",
                          R"("batch_size":8,"accumulate_steps":9)"}) {
    auto r = parse_job_spec(std::string(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"},"train":{)") + bad + "}}");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(r.error().field == "train.precision" || r.error().field == "train.accumulate_steps" ||
                r.error().field == "train.recompute")
        << bad << ": " << r.error().field;
  }
  // Recomputation gives bit-identical results: not part of the fingerprint. Precision and
  // accumulation are, and at their defaults they leave older specs' fingerprints unchanged.
  JobSpec re = *d;
  re.train.recompute = true;
  EXPECT_EQ(training_fingerprint(re), training_fingerprint(*d));
  JobSpec half = *d, acc = *d;
  half.train.precision = Precision::bf16;
  acc.train.accumulate_steps = 2;
  EXPECT_NE(training_fingerprint(half), training_fingerprint(*d));
  EXPECT_NE(training_fingerprint(acc), training_fingerprint(*d));
  EXPECT_EQ(to_json(*d).find("\"precision\":\"fp32\"") != std::string::npos, true) << "canonical JSON has every field";
}

TEST(JobSpec, OptionalUserRoundTripsAndIsOmittedWhenUnset) {
  auto plain = parse_job_spec(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"}})");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->user, "");
  EXPECT_EQ(to_json(*plain).find("\"user\""), std::string::npos);
  auto owned = parse_job_spec(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"},"user":"alice"})");
  ASSERT_TRUE(owned);
  EXPECT_EQ(owned->user, "alice");
  auto again = parse_job_spec(to_json(*owned));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *owned);
  auto bad = parse_job_spec(R"({"model":{"kind":"mlp"},"data":{"dataset":"synthetic"},"user":7})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "user");
}

TEST(JobSpec, CommandJobsParseRoundTripAndNameTheirFields) {
  auto r = parse_job_spec(R"({"command": ["/usr/bin/python3", "train.py", "--steps", "3"],
    "env": {"OMP_NUM_THREADS": "1"}, "estimate": {"hours": 2, "gpu": "V100"},
    "checkpoint": {"grace_s": 5}, "resources": {"gpu": "cpu", "memory_mb": 2048}})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->is_command());
  EXPECT_EQ(r->name, "train.py") << "the default name is the script the interpreter runs";
  EXPECT_EQ(r->command.size(), 4u);
  EXPECT_EQ(r->env, (std::vector<std::pair<std::string, std::string>>{{"OMP_NUM_THREADS", "1"}}));
  ASSERT_TRUE(r->estimate);
  EXPECT_EQ(r->estimate->hours, 2);
  EXPECT_EQ(r->checkpoint.grace_s, 5);
  EXPECT_EQ(r->resources.memory_mb, 2048);
  EXPECT_EQ(training_steps(*r), 0);
  const std::string canonical = to_json(*r);
  EXPECT_EQ(canonical.find("\"model\""), std::string::npos) << canonical;
  auto again = parse_job_spec(canonical);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(to_json(*again), canonical);

  EXPECT_EQ(parse_error(R"({"command": []})").field, "command");
  EXPECT_EQ(parse_error(R"({"command": "python3 train.py"})").field, "command");
  EXPECT_EQ(parse_error(R"({"command": ["python3", 3]})").field, "command[1]");
  EXPECT_EQ(parse_error(R"({"command": [""]})").field, "command[0]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "model": {"kind": "mlp"}})").field, "model");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "train": {}})").field, "train");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "env": {"JOBCTL_RESUME_FROM": "/etc/passwd"}})").field,
            "env.JOBCTL_RESUME_FROM");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "env": {"1BAD": "x"}})").field, "env.1BAD");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "env": {"A": 1}})").field, "env.A");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "estimate": {"gpu": "V100"}})").field, "estimate.hours");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "estimate": {"hours": 0}})").field, "estimate.hours");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "estimate": {"hours": 1, "when": 2}})").field, "estimate.when");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "checkpoint": {"grace_s": 0}})").field, "checkpoint.grace_s");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "resources": {"memory_mb": 1}})").field, "resources.memory_mb");
  // A built-in model's spec takes neither env nor estimate.
  EXPECT_EQ(parse_error(with(R"("env": {"A": "b"})")).field, "env");
  EXPECT_EQ(parse_error(with(R"("estimate": {"hours": 1})")).field, "estimate");
}

TEST(JobSpec, ACommandJobsSetupIsAnOrderedListOfCommands) {
  auto r = parse_job_spec(R"({"command": ["python3", "train.py"],
    "setup": ["python3 -m venv --system-site-packages .venv", ".venv/bin/pip install -r requirements.txt"]})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->setup, (std::vector<std::string>{"python3 -m venv --system-site-packages .venv",
                                                ".venv/bin/pip install -r requirements.txt"}));
  const std::string canonical = to_json(*r);
  auto again = parse_job_spec(canonical);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(to_json(*again), canonical);
  // None given: none in the canonical form (older specs keep theirs).
  EXPECT_EQ(to_json(*parse_job_spec(R"({"command": ["x"]})")).find("setup"), std::string::npos);

  EXPECT_EQ(parse_error(R"({"command": ["x"], "setup": "pip install torch"})").field, "setup");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "setup": ["ok", 3]})").field, "setup[1]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "setup": [""]})").field, "setup[0]");
  std::string many = R"({"command": ["x"], "setup": [)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "\"true\"";
  EXPECT_EQ(parse_error(many + "]}").field, "setup");
  EXPECT_EQ(parse_error(with(R"("setup": ["true"])")).field, "setup") << "a built-in model has no setup";
}

// A command job's image: a reference with its registry, a pull policy and mounts; the canonical
// form keeps them (and leaves the defaults out).
TEST(JobSpec, AnImageIsAReferenceWithItsRegistryAndItsMountsArePlainAbsolutePaths) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  for (const std::string& ok : std::vector<std::string>{"registry.example.com/team/train:1", "127.0.0.1:5000/train", "localhost/a/b/c:v1.2-rc_3",
                               "registry.example.com/train@" + digest, "ghcr.io/org/img:tag@" + digest}) {
    auto r = parse_job_spec(R"({"command": ["x"], "image": ")" + ok + "\"}");
    ASSERT_TRUE(r) << ok << ": " << r.error().message;
    EXPECT_EQ(r->image, ok);
    EXPECT_EQ(r->image_pull, ImagePull::if_missing);
  }
  auto r = parse_job_spec(R"({"command": ["python3", "train.py"], "image": "127.0.0.1:5000/team/train:2",
    "image_pull": "always", "mounts": [{"source": "/data/sets", "target": "/data"},
                                       {"source": "/scratch", "target": "/scratch", "writable": true}]})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->image_pull, ImagePull::always);
  EXPECT_EQ(r->mounts, (std::vector<MountSpec>{{"/data/sets", "/data", false}, {"/scratch", "/scratch", true}}));
  const std::string canonical = to_json(*r);
  auto again = parse_job_spec(canonical);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(to_json(*again), canonical);
  EXPECT_EQ(to_json(*parse_job_spec(R"({"command": ["x"], "image": "a.io/b"})")).find("image_pull"), std::string::npos);

  auto image_error = [](const std::string& image) {
    return parse_error(R"({"command": ["x"], "image": ")" + image + "\"}");
  };
  const Error no_registry = image_error("python:3.11");
  EXPECT_EQ(no_registry.field, "image");
  EXPECT_NE(no_registry.message.find("registry"), std::string::npos) << no_registry.message;
  EXPECT_EQ(image_error("team/train:1").field, "image") << "team is no host: a short name each worker resolves";
  EXPECT_EQ(image_error("registry.example.com/Team/train").field, "image") << "uppercase repository";
  EXPECT_EQ(image_error("registry.example.com/train:-bad").field, "image") << "a tag begins with a letter, digit or _";
  EXPECT_EQ(image_error("registry.example.com/train:" + std::string(129, 'a')).field, "image");
  EXPECT_EQ(image_error("registry.example.com/train@sha256:abc").field, "image") << "a short digest";
  EXPECT_EQ(image_error("registry.example.com/train@md5:" + std::string(64, 'a')).field, "image");
  EXPECT_EQ(image_error("registry.example.com/train@sha256:" + std::string(64, 'A')).field, "image");
  EXPECT_EQ(image_error("registry.example.com:99999/train").field, "image") << "a port past 65535";
  EXPECT_EQ(image_error("").field, "image");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "image": 3})").field, "image");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "image": "a.io/b", "image_pull": "sometimes"})").field, "image_pull");

  auto mount_error = [](const std::string& mounts) {
    return parse_error(R"({"command": ["x"], "image": "a.io/b", "mounts": )" + mounts + "}");
  };
  EXPECT_EQ(mount_error(R"([{"source": "data", "target": "/data"}])").field, "mounts[0].source") << "relative";
  EXPECT_EQ(mount_error(R"([{"source": "/data", "target": "data"}])").field, "mounts[0].target") << "relative";
  EXPECT_EQ(mount_error(R"([{"source": "/data/../etc", "target": "/data"}])").field, "mounts[0].source");
  EXPECT_EQ(mount_error(R"([{"source": "/data", "target": "/a/./b"}])").field, "mounts[0].target");
  EXPECT_EQ(mount_error(R"([{"source": "/data", "target": "/proc/x"}])").field, "mounts[0].target");
  EXPECT_EQ(mount_error(R"([{"source": "/a", "target": "/data"}, {"source": "/b", "target": "/data"}])").field,
            "mounts[1].target")
      << "a target mounted twice";
  EXPECT_EQ(mount_error(R"([{"source": "/a"}])").field, "mounts[0].target");
  EXPECT_EQ(mount_error(R"([{"source": "/a", "target": "/b", "mode": "rw"}])").field, "mounts[0].mode");
  EXPECT_EQ(mount_error(R"({"source": "/a", "target": "/b"})").field, "mounts");

  // Without an image there is nothing to pull or mount into; a training job runs no image.
  EXPECT_EQ(parse_error(R"({"command": ["x"], "image_pull": "never"})").field, "image_pull");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "mounts": [{"source": "/a", "target": "/b"}]})").field, "mounts");
  EXPECT_EQ(parse_error(with(R"("image": "a.io/b")")).field, "image");
  // setup runs on the worker's machine, not in the image.
  EXPECT_EQ(parse_error(R"({"command": ["x"], "image": "a.io/b", "setup": ["pip install x"]})").field, "setup");
}

// `after`: job ids, array ids written a12, or objects with a condition; canonical as objects.
TEST(JobSpec, AfterNamesJobsAndArraysWithTheirConditions) {
  auto r = parse_job_spec(R"({"command": ["x"], "after": [12, "a14", {"job": 13, "condition": "ended"},
    {"array": 20}]})");
  ASSERT_TRUE(r) << r.error().message;
  using C = DependencyCondition;
  EXPECT_EQ(r->after, (std::vector<JobDependency>{{false, 12, C::succeeded}, {true, 14, C::succeeded},
                                                  {false, 13, C::ended}, {true, 20, C::succeeded}}));
  const std::string canonical = to_json(*r);
  EXPECT_NE(canonical.find(R"("after":[{"job":12,"condition":"succeeded"},{"array":14,"condition":"succeeded"},)"),
            std::string::npos) << canonical;
  auto again = parse_job_spec(canonical);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(to_json(*again), canonical);
  // A built-in model's job takes it too; none given, none in the canonical form.
  EXPECT_TRUE(parse_job_spec(with(R"("after": [1])")));
  EXPECT_EQ(to_json(*parse_job_spec(R"({"command": ["x"]})")).find("after"), std::string::npos);

  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": 12})").field, "after");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [12, 0]})").field, "after[1]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": ["12"]})").field, "after[0]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": ["a"]})").field, "after[0]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [1.5]})").field, "after[0]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [{"job": 1, "array": 2}]})").field, "after[0]");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [{"job": 1, "condition": "failed"}]})").field,
            "after[0].condition");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [{"job": 1, "when": "ended"}]})").field, "after[0].when");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "after": [3, {"job": 3}]})").field, "after[1]");
  std::string many = R"({"command": ["x"], "after": [)";
  for (int i = 1; i <= 65; ++i) many += std::string(i > 1 ? "," : "") + std::to_string(i);
  EXPECT_EQ(parse_error(many + "]}").field, "after");
}

TEST(JobSpec, NewFieldsLeaveOldCanonicalFormsAlone) {
  auto r = parse_job_spec(kDesignExample);
  ASSERT_TRUE(r);
  const std::string canonical = to_json(*r);
  EXPECT_EQ(canonical.find("grace_s"), std::string::npos);
  EXPECT_EQ(canonical.find("memory_mb"), std::string::npos);
  EXPECT_EQ(canonical.find("command"), std::string::npos);
}

TEST(JobSpec, EstimateModelDescribesATransformerAndNamesItsFields) {
  auto r = parse_job_spec(R"({"command": ["python3", "train.py"], "resources": {"gpus": 4},
    "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
      "micro_batch": 2, "steps": 1000, "precision": "fp16", "optimizer": "adam8bit",
      "recompute": "selective", "zero_stage": 2, "tensor_parallel": 2}}})");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->estimate && r->estimate->model);
  const TransformerWorkload& m = *r->estimate->model;
  EXPECT_EQ(r->estimate->hours, 0);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.micro_batch, 2);
  EXPECT_EQ(m.steps, 1000);
  EXPECT_EQ(m.precision, WorkloadPrecision::fp16);
  EXPECT_EQ(m.optimizer, WorkloadOptimizer::adam8bit);
  EXPECT_EQ(m.recompute, Recompute::selective);
  EXPECT_EQ(m.zero_stage, 2);
  EXPECT_EQ(m.tensor_parallel, 2);
  const std::string canonical = to_json(*r);
  auto again = parse_job_spec(canonical);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(to_json(*again), canonical);
  // By parameter count: the vocabulary may be left out; defaults bf16, AdamW, no recomputation.
  auto p = parse_job_spec(R"({"command": ["x"], "estimate": {"hours": 3, "model": {"parameters": 7000000000,
    "layers": 32, "hidden": 4096, "heads": 32, "tokens": 1000}}})");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->estimate->model->parameters, 7'000'000'000);
  EXPECT_EQ(p->estimate->model->precision, WorkloadPrecision::bf16);
  EXPECT_EQ(p->estimate->model->optimizer, WorkloadOptimizer::adamw);
  EXPECT_EQ(p->estimate->model->recompute, Recompute::none);
  EXPECT_EQ(p->estimate->hours, 3);

  const auto field = [](const std::string& model, const std::string& resources = "{}") {
    return parse_error(R"({"command": ["x"], "resources": )" + resources + R"(, "estimate": {"model": )" + model + "}}")
        .field;
  };
  const std::string shape = R"("layers": 2, "hidden": 64, "heads": 4, "vocab": 10, )";
  EXPECT_EQ(field(R"({"hidden": 64, "heads": 4, "vocab": 10, "tokens": 1})"), "estimate.model.layers");
  EXPECT_EQ(field(R"({"layers": 2, "hidden": 64, "heads": 4, "tokens": 1})"), "estimate.model.vocab");
  EXPECT_EQ(field(R"({"layers": 2, "hidden": 64, "heads": 5, "vocab": 10, "tokens": 1})"), "estimate.model.heads");
  EXPECT_EQ(field("{" + shape + R"("layers_x": 1, "tokens": 1})"), "estimate.model.layers_x");
  EXPECT_EQ(field("{" + shape + R"("seq_len": 0, "tokens": 1})"), "estimate.model.seq_len");
  EXPECT_EQ(field("{" + shape + R"("micro_batch": 1})"), "estimate.model.tokens");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "steps": 5})"), "estimate.model.steps");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "precision": "int8"})"), "estimate.model.precision");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "optimizer": "lion"})"), "estimate.model.optimizer");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "recompute": true})"), "estimate.model.recompute");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "zero_stage": 4})"), "estimate.model.zero_stage");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "tensor_parallel": 3})"), "estimate.model.tensor_parallel");
  EXPECT_EQ(field("{" + shape + R"("tokens": 5, "tensor_parallel": 2})", R"({"gpus": 3})"),
            "estimate.model.tensor_parallel");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "estimate": {"gpu": "V100"}})").field, "estimate.hours");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "estimate": {"model": 7}})").field, "estimate.model");

  // resources.gpus "auto": with estimate.model only; kept in the canonical form.
  auto a = parse_job_spec(R"({"command": ["x"], "resources": {"gpus": "auto"}, "estimate": {"model": {)" + shape +
                          R"("tokens": 5, "tensor_parallel": 2}}})");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->resources.gpus_auto);
  EXPECT_EQ(a->resources.gpus, 1);
  auto a2 = parse_job_spec(to_json(*a));
  ASSERT_TRUE(a2) << a2.error().message;
  EXPECT_EQ(*a2, *a);
  EXPECT_EQ(parse_error(R"({"command": ["x"], "resources": {"gpus": "auto"}})").field, "resources.gpus");
  EXPECT_EQ(parse_error(R"({"command": ["x"], "resources": {"gpus": "many"}})").field, "resources.gpus");
  EXPECT_EQ(parse_error(R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"}, "resources": {"gpus": "auto"}})").field,
            "resources.gpus");
}

}  // namespace
}  // namespace jobctl::train

TEST(JobSpec, ACommandJobIsNamedAfterTheScriptItRuns) {
  using V = std::vector<std::string>;
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3", "train.py", "--steps", "300"}), "train.py");
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3.11", "-u", "src/train.py"}), "train.py");
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3", "-m", "pkg.train", "--lr", "0.1"}), "pkg.train");
  EXPECT_EQ(jobctl::train::command_job_name(V{"torchrun", "--nproc_per_node", "2", "train.py"}), "train.py");
  EXPECT_EQ(jobctl::train::command_job_name(V{"bash", "run.sh"}), "run.sh");
  EXPECT_EQ(jobctl::train::command_job_name(V{"./bin/trainer", "--config", "a.yaml"}), "trainer") << "not an interpreter";
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3"}), "python3") << "no script: the program";
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3", "-c", "print(1)"}), "python3") << "inline code names no file";
  EXPECT_EQ(jobctl::train::command_job_name(V{"python3", std::string(200, 'a') + ".py"}), "command");
}
