// Task files (docs/task-files.md): a job described in YAML next to its code, which `jobctl
// launch` (and jobctld, for a task sent as text) turns into the JSON job spec (docs/job-spec.md)
// and validates with the spec's own parser (train::parse_job_spec; a sweep's cases through
// train::expand_sweep first), so a task file and a JSON spec are held to one set of rules. Every field of the spec keeps the position
// it came from, and an error about a field names the file, the line and the column it was written
// at (or the --set that gave it).
//
// jobctld resolves task files sent as text by its users (POST /v1/tasks/resolve): the text is
// bounded by the caller, its YAML values as written by kMaxTaskNodes, and what it stands for once
// its aliases are written out by kMaxTaskBytes.
//
// Thread safety: pure functions over values (load_task_file reads one file).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

namespace jobctl::task {

// The most YAML values (scalars, lists, mappings, aliases) a task file may have as written: they
// are counted from the parser's events before a tree is built (yaml-cpp's tree takes some 450
// bytes a value).
inline constexpr size_t kMaxTaskNodes = 20'000;
// The most bytes a task file may stand for once its aliases are written out: every value's text
// with its dotted field name and position (TaskFile::origins), and a fixed cost a value.
inline constexpr size_t kMaxTaskBytes = size_t{4} << 20;

struct TaskFile {
  std::string path;              // as given: errors name it
  nlohmann::json spec;           // the JSON job spec, `sweep` included when the task has one
  std::string workdir;           // the folder to pack, resolved against the task file's folder; "" none
  // Where each field of the spec came from: its dotted path ("resources.gpus", "env.LR",
  // "setup[1]") -> "FILE:LINE:COLUMN" or "--set KEY".
  std::map<std::string, std::string> origins;
  bool run_line = false;         // run was a command line (the spec's command is /bin/sh -c LINE)
};

// Parses a task file's text. `sets` are --set KEY=VALUE, each replacing (or adding) the field at
// the dotted KEY with VALUE read as YAML ("resources.gpus=2", "run=python3 x.py"). `path` names
// the file in errors and anchors a relative workdir.
Expected<TaskFile> parse_task_file(const std::string& text, const std::string& path,
                                   const std::vector<std::string>& sets = {});
Expected<TaskFile> load_task_file(const std::string& path, const std::vector<std::string>& sets = {});

// The spec validated: each sweep case (or the spec alone) by train::parse_job_spec. Returns the
// number of jobs it stands for.
Expected<int> validate_task(const TaskFile& task);

// `e` (an error naming a spec field, from validate_task or from jobctld) with the position of the
// field in the task file: "task.yaml:7:9: resources.gpus must be ..." and the task's own field
// name (`run` for the spec's `command`).
Error locate_error(const TaskFile& task, Error e);

}  // namespace jobctl::task
