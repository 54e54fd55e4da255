#include "daemon/http/api_routes.h"

#include <limits>

#include "daemon/auth/worker_credentials.h"
#include "daemon/http/api_json.h"
#include "daemon/http/auth_gate.h"
#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "daemon/jobs/worker_capabilities.h"
#include "net/json_body.h"
#include "protocol/worker_messages.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::http {

using nlohmann::json;
using jobs::JobService;

namespace {

Expected<int64_t> path_id(const net::PathParams& p, std::string_view field) {
  return net::parse_int_param(p.at(0), field, 1, net::kMaxId);
}

// Runs `fn` (returning Expected<json>) and answers `ok_status` with its value, or the error.
template <class F>
void answer(const net::Responder& respond, int ok_status, F&& fn) {
  Expected<json> r = fn();
  respond(r ? net::json_response(ok_status, *r) : net::error_response(r.error()));
}

// ---------------------------------------------------------------- jobs

// A cancel's body: none, or `{}`.
Status no_body(const net::HttpRequest& req) {
  auto body = net::json_object_body(req, /*required=*/false);
  if (!body) return body.error();
  return net::only_keys(*body, {});
}

// A submit's body: a JSON spec, sent as JSON.
Status check_spec_body(const net::HttpRequest& req) {
  if (req.body.empty()) return make_error(ErrorCode::invalid_argument, "a job spec (JSON) is required", "body");
  if (!net::is_json_content_type(req.content_type))
    return make_error(ErrorCode::unsupported_media_type, "the job spec must be sent with Content-Type: application/json",
                      "Content-Type");
  return {};
}

// A submit's refusal as answered: a spec error without a field is about the whole body; a failure
// of the daemon's own store names the store (sqlite.h).
net::HttpResponse submit_refusal(Error e) {
  const bool spec_error = e.code == ErrorCode::invalid_argument || e.code == ErrorCode::malformed_json;
  if (e.field.empty() && spec_error) e.field = "body";
  return net::error_response(e);
}

void submit_job(jobs::JobService& svc, const net::HttpRequest& req, const net::Responder& respond) {
  if (auto st = check_spec_body(req); !st) return respond(net::error_response(st.error()));
  // Owner from the auth gate ("" without auth); a retry with the same Idempotency-Key returns
  // the first job (docs/api.md). Whether the caller may submit a command job is the admission
  // step's to check against the parsed spec (auth/auth_admission.h).
  const Caller& caller = caller_of(req);
  std::string idempotency_key = req.header_or_empty("Idempotency-Key");
  if (idempotency_key.size() > 200)
    return respond(net::error_response(make_error(ErrorCode::invalid_argument, "Idempotency-Key must be at most 200 bytes", "Idempotency-Key")));
  // Answered from the store's completion, once the job is durable (the route runs on the I/O
  // thread and never blocks: Dispatch::io).
  svc.submit_job_async(req.body,
                       jobs::SubmitContext{caller.user, std::move(idempotency_key), caller.may_submit_commands()},
                       [respond](Expected<jobs::JobRow> job) {
                         if (!job) return respond(submit_refusal(job.error()));
                         net::HttpResponse res = net::json_response(201, job_summary_json(*job));
                         res.headers.emplace_back("Location", "/v1/jobs/" + std::to_string(job->id));
                         respond(std::move(res));
                       });
}

// A sweep: the spec with `sweep` (docs/task-files.md), one job per case, stored together.
void submit_array(jobs::JobService& svc, const net::HttpRequest& req, const net::Responder& respond) {
  if (auto st = check_spec_body(req); !st) return respond(net::error_response(st.error()));
  const Caller& caller = caller_of(req);
  if (!req.header_or_empty("Idempotency-Key").empty())
    return respond(net::error_response(make_error(ErrorCode::invalid_argument,
                                                  "Idempotency-Key is for POST /v1/jobs; an array is submitted once",
                                                  "Idempotency-Key")));
  svc.submit_array_async(req.body, jobs::SubmitContext{caller.user, "", caller.may_submit_commands()},
                         [respond](Expected<std::vector<jobs::JobRow>> rows) {
                           if (!rows) return respond(submit_refusal(rows.error()));
                           const int64_t array_id = rows->front().id;
                           json jobs = json::array();
                           for (const auto& r : *rows) jobs.push_back(job_summary_json(r));
                           net::HttpResponse res =
                               net::json_response(201, json{{"array_id", array_id}, {"jobs", std::move(jobs)}});
                           res.headers.emplace_back("Location", "/v1/jobs?array=" + std::to_string(array_id));
                           respond(std::move(res));
                         });
}

void cancel_array(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    if (auto st = no_body(req); !st) return st.error();
    auto rows = svc.cancel_array(*id, caller_of(req).job_scope());  // a user cancels only their own
    if (!rows) return rows.error();
    json jobs = json::array();
    for (const auto& r : *rows) jobs.push_back(job_summary_json(r));
    return json{{"array_id", *id}, {"jobs", std::move(jobs)}};
  });
}

void list_jobs(jobs::JobService& svc, const net::HttpRequest& req, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    jobs::JobListRequest lr;
    lr.owner = caller_of(req).job_scope();  // auth: a user lists only their own jobs
    for (const auto& [key, value] : req.query) {
      if (key == "state") {
        auto s = scheduler::parse_job_state(value);
        if (!s)
          return make_error(ErrorCode::invalid_argument,
                            "state must be one of queued, held, placed, running, preempted, "
                            "succeeded, failed, cancelled (got '" + value.substr(0, 40) + "')",
                            "state");
        lr.state = *s;
      } else if (key == "limit") {
        auto v = net::parse_int_param(value, "limit", 1, svc.options().max_list_limit);
        if (!v) return v.error();
        lr.limit = static_cast<int>(*v);
      } else if (key == "after") {
        auto v = net::parse_int_param(value, "after", 0, net::kMaxId);
        if (!v) return v.error();
        lr.after_id = *v;
      } else if (key == "array") {
        auto v = net::parse_int_param(value, "array", 1, net::kMaxId);
        if (!v) return v.error();
        lr.array_id = *v;
      } else {
        return net::unknown_query_parameter(key);
      }
    }
    auto page = svc.list_jobs(lr);
    if (!page) return page.error();
    json jobs = json::array();
    auto waits = svc.waits(page->jobs);
    if (!waits) return waits.error();
    for (const auto& j : page->jobs) {
      json summary = job_summary_json(j);
      if (j.damaged) {  // what is damaged, and nothing read from it
        jobs.push_back(std::move(summary));
        continue;
      }
      auto w = waits->find(j.id);
      summary["waiting"] = w == waits->end() ? json(nullptr) : wait_json(w->second);
      // Where it is placed and what it cost so far, for a list that shows them: the placement
      // document's chosen row only (the whole document is GET /v1/jobs/{id}'s), and the cost as
      // the job object gives it.
      summary["placement"] = j.chosen ? json{{"chosen", j.chosen->row}} : json(nullptr);
      auto c = page->costs.find(j.id);
      ledger::JobCost cost;
      if (c != page->costs.end()) {
        cost.usd = c->second.usd;
        cost.on_demand_usd = c->second.on_demand_usd;
        cost.no_equivalent_usd = c->second.no_equivalent_usd;
      }
      summary["cost"] = job_cost_json(cost);
      jobs.push_back(std::move(summary));
    }
    return json{{"jobs", std::move(jobs)},
                {"next", page->next_after ? json(std::to_string(*page->next_after)) : json(nullptr)}};
  });
}

void get_job(jobs::JobService& svc, const net::HttpRequest&, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto d = svc.get_job(*id);
    if (!d) return d.error();
    json j = job_detail_json(*d);
    auto waits = svc.waits({d->job});
    if (!waits) return waits.error();
    auto w = waits->find(d->job.id);
    j["waiting"] = w == waits->end() ? json(nullptr) : wait_json(w->second);
    // A command job's code: the bundle it names and its size (null: none, or no longer stored).
    j["bundle"] = nullptr;
    if (j["spec"].is_object() && j["spec"].value("bundle", std::string()).size() == 64) {
      const std::string sha = j["spec"]["bundle"];
      auto bytes = svc.bundle_bytes(sha);
      if (!bytes) return bytes.error();
      j["bundle"] = {{"sha256", sha}, {"bytes", *bytes ? json(**bytes) : json(nullptr)}};
    }
    return j;
  });
}

void cancel_job(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    if (auto st = no_body(req); !st) return st.error();
    auto job = svc.cancel_job(*id);
    if (!job) return job.error();
    return job_summary_json(*job);
  });
}

// Body (optional): {"to": "local" | "on_demand" | "spot", "reason": "..."}.
void move_job(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 202, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto body = net::json_object_body(req, /*required=*/false);
    if (!body) return body.error();
    if (auto st = net::only_keys(*body, {"to", "reason"}); !st) return st.error();
    jobs::MoveRequest move;
    auto to = net::string_field(*body, "to", 40, std::string());
    if (!to) return to.error();
    if (!to->empty()) {
      auto target = jobs::move_target_from_string(*to);
      if (!target)
        return make_error(ErrorCode::invalid_argument, "to must be local, on_demand or spot (got '" + *to + "')", "to");
      move.target = *target;
    }
    auto reason = net::string_field(*body, "reason", 200, std::string());
    if (!reason) return reason.error();
    move.reason = std::move(*reason);
    auto job = svc.request_move(*id, move);
    if (!job) return job.error();
    json out = job_summary_json(*job);
    out["move"] = {{"to", jobs::to_string(move.target)}, {"reason", move.reason}};
    return out;
  });
}

// ---------------------------------------------------------------- workers

void register_worker(jobs::JobService& svc, const net::HttpRequest& req, const net::Responder& respond) {
  answer(respond, 201, [&]() -> Expected<json> {
    auto body = net::json_object_body(req, /*required=*/true);
    if (!body) return body.error();
    if (auto st = net::only_keys(*body, {"name", "capabilities"}); !st) return st.error();
    jobs::WorkerRegistration reg;
    auto name = net::string_field(*body, "name", 200, std::string("worker"));
    if (!name) return name.error();
    reg.name = std::move(*name);
    auto caps_it = body->find("capabilities");
    if (caps_it == body->end()) return make_error(ErrorCode::invalid_argument, "capabilities is required", "capabilities");
    auto caps = jobs::capabilities_from_json(*caps_it, "capabilities");
    if (!caps) return caps.error();
    reg.capabilities = std::move(*caps);
    // The worker's own secret: every later call it makes carries it (auth_gate.h).
    auto secret = auth::WorkerCredentials::issue();
    if (!secret) return secret.error();
    reg.secret_hash = secret->hash_hex;
    auto r = svc.register_worker(reg);
    if (!r) return r.error();
    return protocol::to_json(protocol::WorkerRegistered{.worker_id = r->worker_id,
                                                        .worker_secret = secret->secret,
                                                        .heartbeat_interval_s = r->heartbeat_interval_s,
                                                        .lease_timeout_s = r->lease_timeout_s,
                                                        .max_lease_wait_s = r->max_lease_wait_s,
                                                        .warnings = jobs::worker_warnings(reg.capabilities)});
  });
}

void list_workers(jobs::JobService& svc, const net::HttpRequest& req, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    // Keyset pages like GET /v1/jobs: `limit` (default 100), `after` the previous page's `next`.
    int64_t limit = 100, after = 0;
    for (const auto& [key, value] : req.query) {
      if (key == "limit") {
        auto v = net::parse_int_param(value, "limit", 1, svc.options().max_list_limit);
        if (!v) return v.error();
        limit = *v;
      } else if (key == "after") {
        auto v = net::parse_int_param(value, "after", 0, net::kMaxId);
        if (!v) return v.error();
        after = *v;
      } else {
        return net::unknown_query_parameter(key);
      }
    }
    // A user sees every worker, but only their own jobs on them. One more than the page: is
    // there a next one?
    auto ws = svc.list_workers(caller_of(req).job_scope(), after, limit + 1);
    if (!ws) return ws.error();
    json next = nullptr;
    if (static_cast<int64_t>(ws->size()) > limit) {
      ws->pop_back();
      next = std::to_string(ws->back().row.id);
    }
    json out = json::array();
    for (const auto& w : *ws) out.push_back(worker_json(w));
    return json{{"workers", std::move(out)}, {"next", std::move(next)}};
  });
}

void lease(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  auto id = path_id(p, "worker_id");
  if (!id) return respond(net::error_response(id.error()));
  if (auto st = check_acting_worker(req, *id); !st) return respond(net::error_response(st.error()));
  int64_t wait_s = 0;
  std::optional<std::vector<int>> free_gpus;
  int rendezvous_port = 0;
  for (const auto& [key, value] : req.query) {
    if (key == "free_gpus") {  // "0,2,3"; "" for none
      free_gpus.emplace();
      for (size_t at = 0; at < value.size();) {
        size_t comma = value.find(',', at);
        if (comma == std::string::npos) comma = value.size();
        auto k = net::parse_int_param(value.substr(at, comma - at), "free_gpus", 0, 63);
        if (!k) return respond(net::error_response(k.error()));
        free_gpus->push_back(static_cast<int>(*k));
        at = comma + 1;
      }
      continue;
    }
    if (key == "port") {  // a TCP port free on the worker's machine: a gang's rendezvous if it is rank 0
      auto v = net::parse_int_param(value, "port", 1, 65535);
      if (!v) return respond(net::error_response(v.error()));
      rendezvous_port = static_cast<int>(*v);
      continue;
    }
    if (key != "wait_s")
      return respond(net::error_response(net::unknown_query_parameter(key)));
    auto v = net::parse_int_param(value, "wait_s", 0, svc.options().max_lease_wait_s);
    if (!v) return respond(net::error_response(v.error()));
    wait_s = *v;
  }
  auto body = net::json_object_body(req, /*required=*/false);
  if (!body) return respond(net::error_response(body.error()));
  if (auto st = net::only_keys(*body, {}); !st) return respond(net::error_response(st.error()));
  // Asynchronous: the service answers when a job is leased or the wait ends; no thread waits.
  svc.lease(*id, wait_s * 1000, [respond](Expected<std::optional<jobs::LeaseGrant>> r) {
    if (!r) return respond(net::error_response(r.error()));
    if (!*r) {
      net::HttpResponse none;
      none.status = 204;
      none.content_type.clear();
      return respond(std::move(none));
    }
    respond(net::json_response(200, lease_json(**r)));
  }, std::move(free_gpus), rendezvous_port);
}

// A worker's timing figures must be possible at all (calibration learns from them: docs/cost-model.md);
// whether they are plausible for the device is the calibrator's to judge. Absent or null is fine.
Status check_timing(const json& obj, const char* object, const char* key, double max) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  const std::string field = std::string(object) + "." + key;
  if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() <= max))
    return make_error(ErrorCode::invalid_argument, field + " must be a number from 0 to " + std::to_string(static_cast<int64_t>(max)),
                      field);
  return {};
}
constexpr double kMaxStepMs = 24.0 * 3600 * 1000;       // a day per step
constexpr double kMaxElapsedS = 365.0 * 24 * 3600;      // a year per run

// A report's lease must be the acting worker's own (the secret the request carries).
Status check_reporter(const net::HttpRequest& req, const jobs::LeaseRef& lease) {
  return check_acting_worker(req, lease.worker_id);
}

void heartbeat(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond,
               const ApiInfo& info) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  auto id = path_id(p, "id");
  if (!id) return fail(id.error());
  auto body = net::json_object_body(req, true);
  if (!body) return fail(body.error());
  // The limit is on the bytes the worker sent, measured before anything is built from them.
  if (const auto received = net::member_text(req.body, "progress"); received && received->size() > info.max_progress_bytes)
    return fail(make_error(ErrorCode::payload_too_large,
                           "progress is " + std::to_string(received->size()) + " bytes of JSON, more than the " +
                               std::to_string(info.max_progress_bytes) + " a heartbeat may carry",
                           "progress"));
  auto decoded = protocol::heartbeat_report_from_json(*body, info.max_log_bytes);
  if (!decoded) return fail(decoded.error());
  jobs::HeartbeatReport hb = std::move(*decoded);
  if (auto st = check_reporter(req, hb.lease); !st) return fail(st.error());
  if (hb.progress_json)
    if (auto st = check_timing(body->at("progress"), "progress", "step_ms", kMaxStepMs); !st) return fail(st.error());
  std::vector<jobs::OutputLine> log = std::move(hb.log);
  // Answered from the store's completion (Dispatch::io: this never blocks); the log lines are on
  // disk before the answer (what the worker is told was delivered survives a crash of jobctld),
  // the progress history records the point after the answer is on its way.
  svc.heartbeat_async(*id, hb, [respond, on_progress = info.on_progress, on_log = info.on_log, job_id = *id,
                                progress = hb.progress_json, log = std::move(log)](Expected<jobs::HeartbeatReply> r) {
    if (!r) return respond(net::error_response(r.error()));
    if (on_log && !log.empty())
      if (auto st = on_log(job_id, log); !st) return respond(net::error_response(st.error()));
    respond(net::json_response(200, protocol::to_json(*r)));
    if (on_progress && progress && !r->cancel) on_progress(job_id, *progress);
  });
}

void complete(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto body = net::json_object_body(req, true);
    if (!body) return body.error();
    auto rep = protocol::completion_report_from_json(*body);
    if (!rep) return rep.error();
    if (auto st = check_reporter(req, rep->lease); !st) return st.error();
    if (auto st = check_timing((*body)["result"], "result", "elapsed_s", kMaxElapsedS); !st) return st.error();
    auto job = svc.complete(*id, *rep);
    if (!job) return job.error();
    return job_summary_json(*job);
  });
}

void fail(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto body = net::json_object_body(req, true);
    if (!body) return body.error();
    auto rep = protocol::failure_report_from_json(*body);
    if (!rep) return rep.error();
    if (auto st = check_reporter(req, rep->lease); !st) return st.error();
    auto job = svc.fail(*id, *rep);
    if (!job) return job.error();
    return job_summary_json(*job);
  });
}

void preempt(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto body = net::json_object_body(req, true);
    if (!body) return body.error();
    auto rep = protocol::preemption_report_from_json(*body);
    if (!rep) return rep.error();
    if (auto st = check_reporter(req, rep->lease); !st) return st.error();
    auto job = svc.preempt(*id, *rep);
    if (!job) return job.error();
    return job_summary_json(*job);
  });
}

// The image a lease runs, as the worker resolved it: {"worker_id", "epoch", "image", "digest"}.
void report_image(jobs::JobService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  answer(respond, 200, [&]() -> Expected<json> {
    auto id = path_id(p, "id");
    if (!id) return id.error();
    auto body = net::json_object_body(req, true);
    if (!body) return body.error();
    auto rep = protocol::image_report_from_json(*body);
    if (!rep) return rep.error();
    if (auto st = check_reporter(req, rep->lease); !st) return st.error();
    auto job = svc.report_image(*id, *rep);
    if (!job) return job.error();
    json out = job_summary_json(*job);
    out["image_digest"] = job->image_digest ? json(*job->image_digest) : json(nullptr);
    return out;
  });
}

}  // namespace

net::Router make_api_router(jobs::JobService& svc, ApiInfo info) {
  net::Router r;
  auto S = [&svc](auto fn) {  // a handler without path parameters
    return [&svc, fn](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) { fn(svc, req, respond); };
  };
  auto P = [&svc](auto fn) {  // a handler with path parameters
    return [&svc, fn](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) { fn(svc, req, p, respond); };
  };
  // ---- the route table (docs/api.md): each route with who may call it (route_access.h) ----
  const RouteAccess user{Access::user}, own_job{Access::user, "id"}, worker{Access::worker};
  // Healthy, or "degraded" (503) while the store cannot write: a load balancer or a monitor
  // then stops sending work here, and the answer says why.
  r.add(route("GET", "/healthz", {Access::anyone}, [&svc, info](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
    const std::optional<std::string> problem = info.store_problem ? info.store_problem() : std::nullopt;
    json body = {{"status", problem ? "degraded" : "ok"},
                 {"version", info.version},
                 {"queued", svc.queued_count()},
                 {"waiting_workers", svc.waiting_workers()}};
    if (problem) body["store"] = *problem;
    respond(net::json_response(problem ? 503 : 200, body));
  }));
  // Submits and heartbeats, the hottest routes, never block (they answer from the store's
  // completion): they run on the I/O thread (router.h, Dispatch).
  r.add(route("POST", "/v1/jobs", user, S(submit_job), net::Dispatch::io));
  r.add(route("GET", "/v1/jobs", user, S(list_jobs)));
  r.add(route("POST", "/v1/arrays", user, S(submit_array), net::Dispatch::io));
  r.add(route("POST", "/v1/arrays/{id}/cancel", user, P(cancel_array)));
  r.add(route("GET", "/v1/jobs/{id}", own_job, P(get_job)));
  r.add(route("POST", "/v1/jobs/{id}/cancel", own_job, P(cancel_job)));
  r.add(route("POST", "/v1/jobs/{id}/move", own_job, P(move_job)));
  r.add(route("POST", "/v1/workers/register", {Access::new_worker}, S(register_worker)));
  r.add(route("GET", "/v1/workers", user, S(list_workers)));
  r.add(route("POST", "/v1/workers/{id}/lease", {Access::worker, "", "id"}, P(lease)));
  r.add(route("POST", "/v1/jobs/{id}/heartbeat", worker, [&svc, info](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
    heartbeat(svc, req, p, respond, info);
  }, net::Dispatch::io));
  r.add(route("POST", "/v1/jobs/{id}/complete", worker, P(complete)));
  r.add(route("POST", "/v1/jobs/{id}/fail", worker, P(fail)));
  r.add(route("POST", "/v1/jobs/{id}/preempt", worker, P(preempt)));
  r.add(route("POST", "/v1/jobs/{id}/image", worker, P(report_image)));
  return r;
}

}  // namespace jobctl::daemon::http
