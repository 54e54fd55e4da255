#include "daemon/http/task_routes.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/http/route_access.h"
#include "net/json_body.h"
#include "task/task_file.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

// The file name the task's errors name and its workdir is relative to: a name alone, as the
// client's folder is not the daemon's to know.
Expected<std::string> task_file_name(const json& body) {
  auto name = net::string_field(body, "path", 255, std::string("task.yaml"));
  if (!name) return name.error();
  if (name->empty() || name->find_first_of("/\\") != std::string::npos || *name == "." || *name == ".." ||
      name->find('\0') != std::string::npos)
    return make_error(ErrorCode::invalid_argument,
                      "path must be the task file's name without its folder (e.g. train.yaml)", "path");
  return name;
}

Expected<std::vector<std::string>> task_sets(const json& body) {
  std::vector<std::string> sets;
  auto it = body.find("set");
  if (it == body.end()) return sets;
  bool ok = it->is_array() && it->size() <= 64;
  if (ok)
    for (const auto& s : *it) ok = ok && s.is_string() && s.get_ref<const std::string&>().size() <= 4096;
  if (!ok)
    return make_error(ErrorCode::invalid_argument,
                      "set must be an array of at most 64 \"KEY=VALUE\" strings (as jobctl launch --set)", "set");
  for (const auto& s : *it) sets.push_back(s.get<std::string>());
  return sets;
}

void resolve(const net::HttpRequest& req, const net::Responder& respond) {
  if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
  auto body = net::json_object_body(req, true);
  if (!body) return respond(net::error_response(body.error()));
  if (auto st = net::only_keys(*body, {"task", "path", "set"}); !st) return respond(net::error_response(st.error()));
  auto text = net::string_field(*body, "task", kMaxTaskTextBytes);
  if (!text) return respond(net::error_response(text.error()));
  auto name = task_file_name(*body);
  if (!name) return respond(net::error_response(name.error()));
  auto sets = task_sets(*body);
  if (!sets) return respond(net::error_response(sets.error()));
  auto parsed = task::parse_task_file(*text, *name, *sets);
  if (!parsed) {
    Error e = parsed.error();
    if (e.field.empty()) e.field = "task";  // the text itself (not YAML, not a mapping)
    return respond(net::error_response(e));
  }
  auto jobs = task::validate_task(*parsed);
  if (!jobs) return respond(net::error_response(jobs.error()));
  respond(net::json_response(200, json{{"spec", parsed->spec},
                                       {"jobs", *jobs},
                                       {"workdir", parsed->workdir.empty() ? json(nullptr) : json(parsed->workdir)},
                                       {"origins", parsed->origins}}));
}

}  // namespace

void add_task_routes(net::Router& router) {
  router.add(route("POST", "/v1/tasks/resolve", {Access::user},
                   [](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                     resolve(req, respond);
                   }));
}

}  // namespace jobctl::daemon::http
