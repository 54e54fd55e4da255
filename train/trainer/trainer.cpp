#include "train/trainer/trainer.h"

#include <algorithm>
#include <cstring>

#include "train/optim/lr_schedule.h"

namespace jobctl::train {

namespace {

Error mismatch(const std::string& message) { return make_error(ErrorCode::checkpoint_mismatch, message); }

}  // namespace

Expected<std::unique_ptr<Trainer>> Trainer::create(const JobSpec& spec, Backend& backend, const Dataset& train,
                                                   const Dataset& test) {
  const InputShape in = input_shape(spec.data);
  for (const Dataset* d : {&train, &test}) {
    const char* which = d == &train ? "training" : "test";
    if (d->features != in.features() || d->classes != in.classes)
      return make_error(ErrorCode::invalid_argument, std::string("the ") + which + " data has " + std::to_string(d->features) +
                                                " features and " + std::to_string(d->classes) +
                                                " classes; the spec implies " + std::to_string(in.features()) +
                                                " and " + std::to_string(in.classes));
    if (d->samples <= 0) return make_error(ErrorCode::invalid_argument, std::string("the ") + which + " data is empty");
  }
  return std::make_unique<Trainer>(spec, backend, train, test);
}

Trainer::Trainer(const JobSpec& spec, Backend& backend, const Dataset& train, const Dataset& test)
    : spec_(spec), backend_(backend), fingerprint_(training_fingerprint(spec)), batch_(spec.train.batch_size),
      micro_batch_(train::micro_batch_size(spec.train)), features_(train.features), classes_(train.classes), train_samples_(train.samples), test_samples_(test.samples),
      steps_per_epoch_((train.samples + spec.train.batch_size - 1) / spec.train.batch_size),
      total_steps_(steps_per_epoch_ * spec.train.epochs), grad_clip_(static_cast<float>(spec.train.grad_clip)),
      net_(spec.model, input_shape(spec.data), micro_batch_, spec.train.precision, spec.train.recompute, backend),
      optimizer_(spec.train, backend, net_.parameter_count()), order_(train.samples, spec.train.seed),
      train_x_(backend, train.x.size()), test_x_(backend, test.x.size()), train_y_(backend, train.y.size()),
      test_y_(backend, test.y.size()), x_batch_(backend, static_cast<size_t>(micro_batch_) * features_),
      y_batch_(backend, static_cast<size_t>(micro_batch_)), row_loss_(backend, static_cast<size_t>(batch_)),
      loss_log_(backend, static_cast<size_t>(steps_per_epoch_)),
      step_buf_(backend, sizeof(StepScalars) + sizeof(int32_t) * static_cast<size_t>(micro_batch_)),
      clip_state_(backend, 1), eval_loss_(backend, static_cast<size_t>(test.samples)),
      eval_correct_(backend, static_cast<size_t>(test.samples)),
      staging_(sizeof(StepScalars) + sizeof(int32_t) * static_cast<size_t>(micro_batch_)), recorded_(backend) {
  train_x_.upload(train.x);
  train_y_.upload(train.y);
  test_x_.upload(test.x);
  test_y_.upload(test.y);
  const ClipState no_clip{1.0f, 0.0f};
  clip_state_.upload(&no_clip, 1);
  initialize();
}

void Trainer::initialize() {
  net_.param_buffer().upload(net_.initial_parameters(spec_.train.seed));
  for (int i = 0; i < optimizer_.moment_count(); ++i)
    backend_.fill_zero(optimizer_.moment(i).data(), optimizer_.moment(i).bytes());
  order_ = BatchOrder(train_samples_, spec_.train.seed);
  global_step_ = 0;
  micro_ = 0;
  epoch_losses_.clear();
  pending_losses_ = 0;
  last_loss_ = 0;
  epoch_finished_ = false;
  epoch_train_loss_ = 0;
  has_eval_ = false;
  eval_epoch_ = -1;
  eval_train_loss_ = test_loss_ = test_accuracy_ = 0;
}

int Trainer::batch_rows(int64_t step) const {
  const int64_t cursor = (step % steps_per_epoch_) * batch_;
  return static_cast<int>(std::min<int64_t>(batch_, train_samples_ - cursor));
}

float Trainer::learning_rate_of(int64_t step) const {
  return static_cast<float>(learning_rate(spec_.train, step, steps_per_epoch_, total_steps_));
}

int64_t Trainer::micro_batches_of(int64_t step) const {
  return (batch_rows(step) + micro_batch_ - 1) / micro_batch_;
}

void Trainer::step() {
  do {
    micro_step();
  } while (micro_ != 0);
}

void Trainer::micro_step() {
  const int64_t in_epoch = global_step_ % steps_per_epoch_;
  if (in_epoch == 0 && micro_ == 0) {
    order_.new_epoch();
    epoch_losses_.clear();
    pending_losses_ = 0;
  }
  const int step_rows = batch_rows(global_step_);
  const int64_t micro_count = micro_batches_of(global_step_);
  const int first_row = static_cast<int>(micro_) * micro_batch_;
  const int rows = std::min(micro_batch_, step_rows - first_row);
  const bool last = micro_ + 1 == micro_count;
  StepScalars sc;
  sc.lr = learning_rate_of(global_step_);
  sc.bias_correction1 = optimizer_.bias_correction1(global_step_ + 1);
  sc.bias_correction2 = optimizer_.bias_correction2(global_step_ + 1);
  sc.loss_slot = static_cast<int32_t>(in_epoch);
  std::memcpy(staging_.data(), &sc, sizeof sc);
  std::memcpy(staging_.data() + sizeof sc, order_.permutation().data() + in_epoch * batch_ + first_row,
              sizeof(int32_t) * static_cast<size_t>(rows));
  backend_.upload(step_buf_.data(), staging_.data(), sizeof sc + sizeof(int32_t) * static_cast<size_t>(rows));
  // The recorded sequence depends on these four only (every buffer is fixed): rows and step rows
  // below 2^20 (batch_size <= 65536), the micro-batch index below 2^20 (<= 1024).
  const uint64_t key = static_cast<uint64_t>(rows) | static_cast<uint64_t>(step_rows) << 20 |
                       static_cast<uint64_t>(micro_) << 40 | static_cast<uint64_t>(last) << 60;
  const int64_t micro = micro_;
  recorded_.run(key, [this, rows, step_rows, micro, last] { micro_body(rows, step_rows, micro, last); });
  if (!last) {
    ++micro_;
    return;
  }
  micro_ = 0;
  ++global_step_;
  ++pending_losses_;
  epoch_finished_ = global_step_ % steps_per_epoch_ == 0;
  if (epoch_finished_) {
    fetch_losses();
    double sum = 0;
    for (float l : epoch_losses_) sum += l;
    epoch_train_loss_ = sum / static_cast<double>(epoch_losses_.size());
  }
}

void Trainer::micro_body(int rows, int step_rows, int64_t micro, bool last) {
  const int32_t* idx = batch_indices();
  backend_.gather_rows(train_x_.data(), features_, idx, rows, x_batch_.data());
  backend_.gather_labels(train_y_.data(), idx, rows, y_batch_.data());
  const float* logits = net_.forward(x_batch_.data(), rows);
  float* row_loss = row_loss_.data() + micro * micro_batch_;
  backend_.softmax_cross_entropy(rows, classes_, logits, y_batch_.data(), 1.0f / static_cast<float>(step_rows),
                                 net_.logits_grad(), row_loss);
  net_.backward(rows, micro > 0);
  if (!last) return;
  backend_.mean_loss(step_rows, row_loss_.data(), loss_log_.data(), scalars());
  if (grad_clip_ > 0.0f)
    backend_.clip_by_global_norm(net_.grads(), net_.parameter_count(), grad_clip_, clip_state_.data());
  optimizer_.update(net_.params(), net_.grads(), scalars(), clip_state_.data());
}

void Trainer::fetch_losses() {
  if (pending_losses_ == 0) return;
  const size_t first = epoch_losses_.size();
  epoch_losses_.resize(first + static_cast<size_t>(pending_losses_));
  loss_log_.download(epoch_losses_.data() + first, static_cast<size_t>(pending_losses_), first);
  pending_losses_ = 0;
  last_loss_ = epoch_losses_.back();
}

float Trainer::last_loss() {
  fetch_losses();
  return last_loss_;
}

EvalResult Trainer::evaluate() {
  for (int64_t off = 0; off < test_samples_; off += micro_batch_) {
    const int rows = static_cast<int>(std::min<int64_t>(micro_batch_, test_samples_ - off));
    const float* logits = net_.forward(test_x_.data() + off * features_, rows);
    backend_.softmax_cross_entropy_eval(rows, classes_, logits, test_y_.data() + off, eval_loss_.data() + off,
                                        eval_correct_.data() + off);
  }
  const std::vector<float> loss = eval_loss_.to_host();
  const std::vector<float> correct = eval_correct_.to_host();
  double loss_sum = 0, correct_sum = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    loss_sum += loss[i];
    correct_sum += correct[i];
  }
  EvalResult r;
  r.samples = test_samples_;
  r.loss = loss_sum / static_cast<double>(test_samples_);
  r.accuracy = correct_sum / static_cast<double>(test_samples_);
  return r;
}

EpochSummary Trainer::evaluate_epoch() {
  const EvalResult r = evaluate();
  has_eval_ = true;
  eval_epoch_ = global_step_ / steps_per_epoch_ - 1;
  eval_train_loss_ = epoch_train_loss_;
  test_loss_ = r.loss;
  test_accuracy_ = r.accuracy;
  return EpochSummary{eval_epoch_, eval_train_loss_, test_loss_, test_accuracy_};
}

TrainingState Trainer::snapshot() {
  fetch_losses();
  TrainingState s;
  s.fingerprint = fingerprint_;
  s.layout_hash = net_.layout_hash();
  s.global_step = global_step_;
  s.epoch = global_step_ / steps_per_epoch_;
  s.cursor = std::min<int64_t>((global_step_ % steps_per_epoch_) * batch_ + micro_ * micro_batch_, train_samples_);
  s.steps_per_epoch = steps_per_epoch_;
  s.batch_size = batch_;
  s.train_samples = train_samples_;
  s.shuffle_rng = order_.rng_state();
  s.permutation = order_.permutation();
  s.epoch_losses = epoch_losses_;
  s.last_loss = last_loss_;
  s.has_eval = has_eval_;
  s.eval_epoch = eval_epoch_;
  s.train_loss = eval_train_loss_;
  s.test_loss = test_loss_;
  s.test_accuracy = test_accuracy_;
  s.optimizer = optimizer_.kind();
  s.params = net_.param_buffer().to_host();
  s.moment1 = optimizer_.moment(0).to_host();
  if (optimizer_.moment_count() == 2) s.moment2 = optimizer_.moment(1).to_host();
  s.micro_step = micro_;
  if (micro_ > 0) {
    s.partial_grads = net_.grad_buffer().to_host();
    s.partial_row_losses.resize(static_cast<size_t>(micro_ * micro_batch_));
    row_loss_.download(s.partial_row_losses.data(), s.partial_row_losses.size());
  }
  return s;
}

Status Trainer::restore(const TrainingState& s) {
  if (s.fingerprint != fingerprint_)
    return mismatch("the checkpoint belongs to another training spec (fingerprint differs: model, data or train "
                    "settings changed)");
  if (s.layout_hash != net_.layout_hash() || s.params.size() != net_.parameter_count())
    return mismatch("the checkpoint's model layout differs from the spec's model");
  if (s.batch_size != batch_ || s.train_samples != train_samples_ || s.steps_per_epoch != steps_per_epoch_)
    return mismatch("the checkpoint was made with another batch size or dataset size");
  if (s.optimizer != optimizer_.kind()) return mismatch("the checkpoint was made with another optimizer");
  if (s.global_step < 0 || s.global_step > total_steps_)
    return mismatch("the checkpoint's step " + std::to_string(s.global_step) + " is outside this run's " +
                    std::to_string(total_steps_) + " steps");
  const int64_t in_epoch = s.global_step % steps_per_epoch_;
  const int64_t expect_losses =
      in_epoch == 0 ? (s.global_step == 0 || s.micro_step > 0 ? 0 : steps_per_epoch_) : in_epoch;
  if (static_cast<int64_t>(s.epoch_losses.size()) != expect_losses || s.epoch != s.global_step / steps_per_epoch_)
    return make_error(ErrorCode::corrupt_checkpoint, "the checkpoint's position and loss history disagree");
  if (s.moment1.size() != s.params.size() ||
      (optimizer_.moment_count() == 2 && s.moment2.size() != s.params.size()))
    return make_error(ErrorCode::corrupt_checkpoint, "optimizer state size does not match the parameter count");
  if (auto st = order_.restore(s.shuffle_rng, s.permutation); !st) return st;
  if (s.global_step > 0 && in_epoch != 0 && s.permutation.empty())
    return make_error(ErrorCode::corrupt_checkpoint, "the checkpoint is mid-epoch but has no sample order");
  if (s.micro_step != 0) {
    if (s.micro_step < 0 || s.global_step >= total_steps_ || s.micro_step >= micro_batches_of(s.global_step))
      return mismatch("the checkpoint's micro-batch " + std::to_string(s.micro_step) +
                      " does not fall inside an optimizer step of this run");
    if (s.permutation.empty())
      return make_error(ErrorCode::corrupt_checkpoint, "the checkpoint is inside a step but has no sample order");
    if (s.partial_grads.size() != s.params.size() ||
        s.partial_row_losses.size() != static_cast<size_t>(s.micro_step * micro_batch_))
      return make_error(ErrorCode::corrupt_checkpoint, "the partial gradient or losses do not match the micro-batch position");
  } else if (!s.partial_grads.empty() || !s.partial_row_losses.empty()) {
    return make_error(ErrorCode::corrupt_checkpoint, "a partial gradient at an optimizer step boundary");
  }

  net_.param_buffer().upload(s.params);
  optimizer_.moment(0).upload(s.moment1);
  if (optimizer_.moment_count() == 2) optimizer_.moment(1).upload(s.moment2);
  if (s.micro_step > 0) {
    net_.grad_buffer().upload(s.partial_grads);
    row_loss_.upload(s.partial_row_losses.data(), s.partial_row_losses.size());
  }
  global_step_ = s.global_step;
  micro_ = s.micro_step;
  epoch_losses_ = s.epoch_losses;
  pending_losses_ = 0;
  last_loss_ = s.last_loss;
  epoch_finished_ = false;
  epoch_train_loss_ = s.train_loss;
  has_eval_ = s.has_eval;
  eval_epoch_ = s.eval_epoch;
  eval_train_loss_ = s.train_loss;
  test_loss_ = s.test_loss;
  test_accuracy_ = s.test_accuracy;
  return ok_status();
}

}  // namespace jobctl::train
