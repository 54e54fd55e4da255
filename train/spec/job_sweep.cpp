#include "train/spec/job_sweep.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/array_variables.h"
#include "train/spec/json.h"

namespace jobctl::train {

namespace {

using json::Value;
using Case = std::vector<std::pair<std::string, std::string>>;

Error bad(const std::string& field, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, field + " " + what, field);
}

// A parameter's value as the program receives it.
Expected<std::string> value_text(const Value& v, const std::string& field) {
  switch (v.type()) {
    case Value::Type::string:
      if (v.as_string().size() > 8192 || v.as_string().find('\0') != std::string::npos)
        return bad(field, "must be at most 8192 bytes, without NUL");
      return v.as_string();
    case Value::Type::integer:
      return std::to_string(v.as_int());
    case Value::Type::number: {
      std::string out;
      json::write_number(out, v.as_double());
      return out;
    }
    case Value::Type::boolean:
      return std::string(v.as_bool() ? "true" : "false");
    default:
      return bad(field, "must be a string, a number or a boolean, not " + std::string(json::type_name(v.type())));
  }
}

Status check_names(const json::Object& params, const std::string& field) {
  if (params.empty()) return bad(field, "must name at least one parameter");
  if (params.size() > kMaxSweepParameters)
    return bad(field, "must have at most " + std::to_string(kMaxSweepParameters) + " parameters");
  std::set<std::string> seen;
  for (const auto& [name, value] : params) {
    const std::string f = field + "." + name;
    if (!is_sweep_parameter_name(name))
      return make_error(ErrorCode::invalid_argument, f + ": " + std::string(kSweepParameterNameRule), f);
    if (!seen.insert(array_parameter_variable(name)).second)
      return bad(f, "is the same variable as another parameter (" + array_parameter_variable(name) + ")");
  }
  return {};
}

Expected<std::vector<Case>> grid_cases(const Value& grid) {
  if (!grid.is_object()) return bad("sweep.grid", "must be an object of NAME: [values]");
  if (auto st = check_names(grid.as_object(), "sweep.grid"); !st) return st.error();
  std::vector<Case> cases{Case{}};
  for (const auto& [name, values] : grid.as_object()) {
    const std::string field = "sweep.grid." + name;
    if (!values.is_array() || values.as_array().empty()) return bad(field, "must be a non-empty array of values");
    if (cases.size() * values.as_array().size() > static_cast<size_t>(kMaxArrayCases))
      return bad("sweep.grid", "makes more than " + std::to_string(kMaxArrayCases) + " cases");
    std::vector<Case> next;
    for (const Case& c : cases)
      for (size_t i = 0; i < values.as_array().size(); ++i) {
        auto text = value_text(values.as_array()[i], field + "[" + std::to_string(i) + "]");
        if (!text) return text.error();
        Case grown = c;
        grown.emplace_back(name, std::move(*text));
        next.push_back(std::move(grown));
      }
    cases = std::move(next);
  }
  return cases;
}

Expected<std::vector<Case>> listed_cases(const Value& list) {
  if (!list.is_array() || list.as_array().empty()) return bad("sweep.cases", "must be a non-empty array of objects");
  if (list.as_array().size() > static_cast<size_t>(kMaxArrayCases))
    return bad("sweep.cases", "must have at most " + std::to_string(kMaxArrayCases) + " cases");
  std::vector<Case> cases;
  for (size_t i = 0; i < list.as_array().size(); ++i) {
    const std::string field = "sweep.cases[" + std::to_string(i) + "]";
    const Value& one = list.as_array()[i];
    if (!one.is_object()) return bad(field, "must be an object of NAME: value");
    if (auto st = check_names(one.as_object(), field); !st) return st.error();
    Case c;
    for (const auto& [name, value] : one.as_object()) {
      auto text = value_text(value, field + "." + name);
      if (!text) return text.error();
      c.emplace_back(name, std::move(*text));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

bool is_sweep_parameter_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && !(name[0] >= '0' && name[0] <= '9') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

Expected<std::vector<std::string>> expand_sweep(std::string_view spec_json) {
  auto parsed = json::parse(spec_json);
  if (!parsed) return std::move(parsed).error();
  if (!parsed->is_object()) return make_error(ErrorCode::invalid_argument, "the job spec must be a JSON object", "");
  const Value* sweep = parsed->find("sweep");
  if (!sweep) return bad("sweep", "is required: the parameters and their values (grid or cases)");
  if (!sweep->is_object()) return bad("sweep", "must be an object with grid or cases");
  const Value* grid = sweep->find("grid");
  const Value* list = sweep->find("cases");
  for (const auto& [key, value] : sweep->as_object())
    if (key != "grid" && key != "cases") return bad("sweep." + key, "is not a field of sweep (grid or cases)");
  if ((grid != nullptr) == (list != nullptr)) return bad("sweep", "must have one of grid or cases");
  auto cases = grid ? grid_cases(*grid) : listed_cases(*list);
  if (!cases) return cases.error();
  if (parsed->find("array")) return bad("array", "is written by the sweep's expansion; give sweep alone");

  json::Object base;
  for (const auto& member : parsed->as_object())
    if (member.first != "sweep") base.push_back(member);
  // Every case repeats the whole spec (each is a job of its own, stored whole): the bytes they
  // come to are bounded, not only their number, and refused before they are made when the spec
  // alone says so.
  const size_t base_bytes = Value(base).dump().size();
  auto too_large = [&](size_t bytes) {
    return make_error(ErrorCode::payload_too_large,
                      "sweep: its " + std::to_string(cases->size()) + " cases come to at least " +
                          std::to_string(bytes) + " bytes of job specs (each case is the whole spec), over the limit of " +
                          std::to_string(kMaxSweepBytes) + "; make the spec smaller or split the sweep",
                      "sweep");
  };
  if (base_bytes > kMaxSweepBytes / std::max<size_t>(1, cases->size())) return too_large(base_bytes * cases->size());
  size_t total = 0;
  std::vector<std::string> specs;
  specs.reserve(cases->size());
  for (size_t i = 0; i < cases->size(); ++i) {
    json::Object params;
    for (const auto& [name, text] : (*cases)[i]) params.push_back({name, Value(text)});
    Value spec(base);
    spec.set("array", Value(json::Object{{"index", Value(static_cast<int64_t>(i))},
                                          {"parameters", Value(std::move(params))}}));
    specs.push_back(spec.dump());
    total += specs.back().size();
    if (total > kMaxSweepBytes) return too_large(total);
  }
  return specs;
}

}  // namespace jobctl::train
