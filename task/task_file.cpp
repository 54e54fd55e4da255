#include "task/task_file.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "train/spec/job_spec.h"
#include "train/spec/job_sweep.h"

namespace jobctl::task {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string position(const std::string& path, const YAML::Mark& mark) {
  if (mark.is_null()) return path;
  return path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Fields whose values are text whatever they look like: `env: {SEED: 1}` means the string "1".
bool text_field(const std::string& path) {
  for (const char* exact : {"name", "user", "resources.gpu", "estimate.gpu", "placement.mode", "placement.spot", "image",
                            "image_pull"})
    if (path == exact) return true;
  // A mount's folders are paths, whatever they look like.
  if (path.rfind("mounts[", 0) == 0 && (path.ends_with(".source") || path.ends_with(".target"))) return true;
  for (const char* prefix : {"env.", "setup", "run"})
    if (path.rfind(prefix, 0) == 0) return true;
  return false;
}

bool is_integer_text(const std::string& s) {
  int64_t v = 0;
  const char* begin = s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0);
  auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// A plain (unquoted) scalar as YAML 1.2's core schema reads it; a quoted one is always text.
json scalar_json(const YAML::Node& node, const std::string& path) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || text_field(path)) return s;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (is_integer_text(s)) return std::strtoll(s.c_str(), nullptr, 10);
  if (s.find_first_of("0123456789") != std::string::npos && s.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size()) return d;
  }
  return s;
}

// Counts the nodes of a YAML text as written (an alias counts once), from the parser's events,
// before any tree is built: yaml-cpp spends some 450 bytes of memory on each node, so 256 KiB of
// "[a,a,a,...]" would take 60 MB as a tree.
class NodeCounter : public YAML::EventHandler {
 public:
  struct TooMany {
    YAML::Mark mark;
  };
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { count(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { count(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { count(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count(m);
  }
  void OnMapEnd() override {}

 private:
  void count(const YAML::Mark& m) {
    if (++nodes_ > kMaxTaskNodes) throw TooMany{m};
  }
  size_t nodes_ = 0;
};

Status check_node_count(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  NodeCounter counter;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(counter);
  } catch (const NodeCounter::TooMany& too_many) {
    return make_error(ErrorCode::invalid_argument,
                      position(file, too_many.mark) + ": the task file has more than " + std::to_string(kMaxTaskNodes) +
                          " YAML values (the limit); a task is far smaller",
                      "");
  } catch (const YAML::Exception&) {
    // Not YAML: YAML::Load says where, below.
  }
  return {};
}

// What one value costs once written out: its text, and its dotted path and position in `origins`
// (a map entry of two strings). A path repeats every key above it, so a long key over many
// aliased values multiplies.
size_t written_bytes(const YAML::Node& node, const std::string& path, const std::string& origin) {
  constexpr size_t kPerValue = 96;  // a map node, two string headers, a JSON value
  return kPerValue + path.size() + origin.size() + (node.IsScalar() ? node.Scalar().size() : 0);
}

// The YAML tree as JSON, each value's position recorded under its dotted path. `budget` counts
// the bytes that produces down: YAML aliases share a node, so a few lines of nested aliases
// stand for billions of values once written out (jobctld resolves task files sent by any user).
Expected<json> yaml_to_json(const YAML::Node& node, const std::string& path, const std::string& file,
                            std::map<std::string, std::string>& origins, size_t& budget) {
  std::string origin = position(file, node.Mark());
  const size_t cost = written_bytes(node, path, origin);
  if (cost > budget)
    return make_error(ErrorCode::invalid_argument,
                      origin + ": the task file stands for more than " + std::to_string(kMaxTaskBytes) +
                          " bytes once its aliases are written out (each value with its field's dotted name; "
                          "the limit); a task is far smaller",
                      "");
  budget -= cost;
  origins[path] = std::move(origin);
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return scalar_json(node, path);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (size_t i = 0; i < node.size(); ++i) {
        auto v = yaml_to_json(node[i], path + "[" + std::to_string(i) + "]", file, origins, budget);
        if (!v) return v.error();
        out.push_back(std::move(*v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        const std::string child = path.empty() ? key : path + "." + key;
        if (out.contains(key))
          return make_error(ErrorCode::invalid_argument,
                            position(file, kv.first.Mark()) + ": " + child + " is given twice", child);
        auto v = yaml_to_json(kv.second, child, file, origins, budget);
        if (!v) return v.error();
        out[key] = std::move(*v);
      }
      return out;
    }
    default:
      return json(nullptr);
  }
}

// Re-keys the origins under `from` (a task field) to `to` (the spec's).
void move_origins(std::map<std::string, std::string>& origins, const std::string& from, const std::string& to) {
  std::map<std::string, std::string> moved;
  for (auto it = origins.begin(); it != origins.end();) {
    const std::string& k = it->first;
    if (k == from || k.rfind(from + ".", 0) == 0 || k.rfind(from + "[", 0) == 0) {
      moved[to + k.substr(from.size())] = it->second;
      it = origins.erase(it);
    } else {
      ++it;
    }
  }
  origins.merge(moved);
}

Error at(const std::map<std::string, std::string>& origins, const std::string& field, const std::string& what) {
  auto it = origins.find(field);
  return make_error(ErrorCode::invalid_argument, (it == origins.end() ? "" : it->second + ": ") + field + " " + what,
                    field);
}

// Applies one --set KEY=VALUE to the YAML tree.
Status apply_set(YAML::Node& root, const std::string& set) {
  const size_t eq = set.find('=');
  if (eq == std::string::npos || eq == 0)
    return make_error(ErrorCode::invalid_argument, "--set " + set + ": expected KEY=VALUE (e.g. resources.gpus=2)",
                      "--set");
  const std::string key = set.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(set.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::invalid_argument, "--set " + key + ": the value is not YAML: " + e.msg, "--set");
  }
  YAML::Node node;
  node.reset(root);
  std::string part;
  std::istringstream parts(key);
  std::vector<std::string> names;
  while (std::getline(parts, part, '.')) {
    if (part.empty())
      return make_error(ErrorCode::invalid_argument, "--set " + key + ": a key is dotted field names", "--set");
    names.push_back(part);
  }
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    if (node[names[i]] && !node[names[i]].IsMap())
      return make_error(ErrorCode::invalid_argument,
                        "--set " + key + ": " + names[i] + " is not a mapping in the task file", "--set");
    if (!node[names[i]]) node[names[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = node[names[i]];
    node.reset(next);
  }
  node[names.back()] = value;
  return {};
}

}  // namespace

Expected<TaskFile> parse_task_file(const std::string& text, const std::string& path, const std::vector<std::string>& sets) {
  TaskFile task;
  task.path = path;
  if (auto st = check_node_count(text, path); !st) return st.error();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::invalid_argument, position(path, e.mark) + ": not valid YAML: " + e.msg, "");
  }
  if (!root.IsMap())
    return make_error(ErrorCode::invalid_argument, path + ": a task file is a mapping of fields (name, run, ...)", "");
  for (const auto& set : sets)
    if (auto st = apply_set(root, set); !st) return st.error();
  size_t budget = kMaxTaskBytes;
  auto converted = yaml_to_json(root, "", path, task.origins, budget);
  if (!converted) return converted.error();
  task.origins.erase("");
  for (const auto& set : sets) {  // a field --set gave is named by its --set
    const std::string key = set.substr(0, set.find('='));
    for (auto& [field, origin] : task.origins)
      if (field == key || field.rfind(key + ".", 0) == 0 || field.rfind(key + "[", 0) == 0) origin = "--set " + key;
  }
  json spec = std::move(*converted);

  if (spec.contains("outputs"))
    return at(task.origins, "outputs",
              "is not a task field: a job's outputs are the files its program leaves in $JOBCTL_OUTPUT_DIR "
              "(docs/job-protocol.md); `jobctl outputs ID` lists them");
  if (spec.contains("workdir")) {
    if (!spec["workdir"].is_string() || spec["workdir"].get<std::string>().empty())
      return at(task.origins, "workdir", "must be a folder (relative to the task file's folder)");
    fs::path dir = spec["workdir"].get<std::string>();
    if (dir.is_relative()) dir = fs::path(path).parent_path() / dir;
    task.workdir = dir.lexically_normal().string();
    if (task.workdir.empty()) task.workdir = ".";
    spec.erase("workdir");
  }
  if (!spec.contains("run")) {
    auto e = make_error(ErrorCode::invalid_argument,
                        path + ": run is required: the command line (or the program and its arguments, a list)", "run");
    return e;
  }
  // run: a command line, run by /bin/sh (so $JOBCTL_PARAM_LR and pipes work), or the program and
  // its arguments, run as they are.
  json& run = spec["run"];
  if (run.is_string()) {
    const std::string line = run.get<std::string>();
    spec["command"] = json::array({"/bin/sh", "-c", line});
    task.run_line = true;
    const std::string origin = task.origins["run"];
    for (int i = 0; i < 3; ++i) task.origins["command[" + std::to_string(i) + "]"] = origin;
  } else {
    spec["command"] = run;
  }
  move_origins(task.origins, "run", "command");
  spec.erase("run");
  if (!spec.contains("name")) {  // the task file's name: `sh` (the program of a command line) says nothing
    spec["name"] = fs::path(path).stem().string();
    task.origins["name"] = path;
  }
  task.spec = std::move(spec);
  return task;
}

Expected<TaskFile> load_task_file(const std::string& path, const std::vector<std::string>& sets) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::not_found, "cannot read the task file " + path, "TASK");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_task_file(text.str(), path, sets);
}

Expected<int> validate_task(const TaskFile& task) {
  const std::string text = task.spec.dump();
  if (!task.spec.contains("sweep")) {
    if (auto spec = train::parse_job_spec(text); !spec) return locate_error(task, spec.error());
    return 1;
  }
  auto cases = train::expand_sweep(text);
  if (!cases) return locate_error(task, cases.error());
  for (size_t i = 0; i < cases->size(); ++i)
    if (auto spec = train::parse_job_spec((*cases)[i]); !spec) {
      Error e = locate_error(task, spec.error());
      e.message = "sweep case " + std::to_string(i) + ": " + e.message;
      return e;
    }
  return static_cast<int>(cases->size());
}

Error locate_error(const TaskFile& task, Error e) {
  // The task's name for the field: `run` where the spec says `command`.
  std::string shown = e.field;
  if (shown == "command" || shown.rfind("command[", 0) == 0)
    shown = task.run_line ? "run" : "run" + shown.substr(7);
  // The nearest field that has a position: "resources.gpus" itself, else "resources".
  std::string probe = e.field;
  std::string origin;
  while (!probe.empty()) {
    if (auto it = task.origins.find(probe); it != task.origins.end()) {
      origin = it->second;
      break;
    }
    const size_t cut = probe.find_last_of(".[");
    probe = cut == std::string::npos ? "" : probe.substr(0, cut);
  }
  if (origin.empty()) origin = task.path;
  std::string message = e.message;
  if (!e.field.empty() && message.rfind(e.field, 0) == 0) message = shown + message.substr(e.field.size());
  e.message = origin + ": " + message;
  e.field = shown;
  return e;
}

}  // namespace jobctl::task
