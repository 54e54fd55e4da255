// The store's part of the Slurm launcher (daemon/slurm/slurm_launcher.h): the slurm_jobs table of
// migration 10. Declared in store.h.
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kSlurmJobColumns =
    "slurm_job_id, job_id, partition, gpus, state, submitted_ms, ended_ms, restarts_at_launch, event, reason";

SlurmJobRow read_slurm_job(const Statement& st) {
  SlurmJobRow r;
  r.slurm_job_id = st.column_int64(0);
  r.job_id = st.column_int64(1);
  r.partition = st.column_text(2);
  r.gpus = static_cast<int>(st.column_int64(3));
  r.state = st.column_text(4);
  r.submitted_ms = st.column_int64(5);
  r.ended_ms = st.column_opt_int64(6);
  r.restarts_at_launch = static_cast<int>(st.column_int64(7));
  r.event = st.column_text(8);
  r.reason = st.column_text(9);
  return r;
}

}  // namespace

Status WriteTxn::put_slurm_job(const SlurmJobRow& r) {
  auto p = db_.prepare(std::string("INSERT OR REPLACE INTO slurm_jobs(") + kSlurmJobColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, r.slurm_job_id).bind(2, r.job_id).bind(3, r.partition).bind(4, int64_t{r.gpus}).bind(5, r.state)
      .bind(6, r.submitted_ms).bind(7, r.ended_ms).bind(8, int64_t{r.restarts_at_launch}).bind(9, r.event)
      .bind(10, r.reason);
  return s->run();
}

Expected<std::vector<SlurmJobRow>> Store::list_slurm_jobs(bool live_only) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(std::string("SELECT ") + kSlurmJobColumns + " FROM slurm_jobs" +
                         (live_only ? " WHERE state != 'ended'" : "") +
                         " ORDER BY state = 'ended', slurm_job_id");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<SlurmJobRow>(*s, read_slurm_job);
}

}  // namespace jobctl::daemon::store
