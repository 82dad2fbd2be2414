/* N processes hammer one breaker shared through /dev/shm (DESIGN §8).
 *
 *   multiprocess [processes (>= 4, default 6)] [closed calls per process (default 200000)]
 *
 * All children open the region at the same instant (exactly one may create it).
 * The outcome of each call follows the epoch of its permit, so the breaker must
 * go through exactly this history, whatever the interleaving:
 *   epoch 0 closed     every call fails          → opens once (epoch 1)
 *   epoch 2 half-open  probes fail               → reopens     (epoch 3)
 *   epoch 4 half-open  probes succeed (3 needed) → closes      (epoch 5)
 *   epoch 5 closed     every call succeeds, until each child made its quota.
 * A permit admitted in an open epoch (1, 3) or a later one is a violation. Probes
 * in flight are counted per epoch in memory shared by the children (incremented
 * after admission, decremented before recording, so the count can only exceed
 * half_open_max_calls if the breaker admitted too many). Each child sends its own
 * counts through a pipe; the parent checks they add up to the breaker's totals.
 * Every 64th permit is recorded twice: the second use must be refused. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define MAX_PROBES 2
#define OPEN_NS 20000000ull /* 20 ms */
#define EPOCHS 8

struct control {
  int64_t probes_in_flight[EPOCHS];
  int64_t max_probes[EPOCHS];
  int64_t violations;
};

struct child_report {
  uint64_t created;
  uint64_t admitted;
  uint64_t rejected;
  uint64_t successes;
  uint64_t failures;
  uint64_t reuse_refused;
  uint64_t error; /* 0 = fine */
};

static seawall_breaker_config config(void) {
  seawall_breaker_config c = seawall_breaker_config_default();
  c.window_kind = SEAWALL_WINDOW_COUNT;
  c.window_size = 20;
  c.minimum_calls = 10;
  c.failure_rate_threshold_ppm = 500000;
  c.open_duration_ns = OPEN_NS;
  c.half_open_max_calls = MAX_PROBES;
  c.half_open_success_threshold = 3;
  c.jitter_seed = 42;
  return c;
}

static void raise_max(int64_t *max, int64_t v) {
  int64_t cur = __atomic_load_n(max, __ATOMIC_SEQ_CST);
  while (v > cur &&
         !__atomic_compare_exchange_n(max, &cur, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
}

static void child(const char *name, int start_fd, int report_fd, struct control *ctl,
                  uint64_t quota) {
  struct child_report rep;
  seawall_breaker_config cfg = config();
  seawall_breaker *b = NULL;
  char go;
  bool created = false;
  uint64_t began, closed_calls = 0;
  ssize_t n;

  memset(&rep, 0, sizeof rep);
  /* Wait until the parent closes the start pipe: everyone opens at once. */
  n = read(start_fd, &go, 1);
  (void)n;
  if (seawall_breaker_open_shared(name, &cfg, &b) != SEAWALL_STATUS_OK ||
      seawall_breaker_created(b, &created) != SEAWALL_STATUS_OK) {
    fprintf(stderr, "child %ld: open: %s\n", (long)getpid(), seawall_last_error_message());
    rep.error = 1;
    goto done;
  }
  rep.created = created;
  began = seawall_now_ns();
  while (closed_calls < quota) {
    seawall_permit p;
    seawall_rejection r;
    uint64_t now = seawall_now_ns();
    seawall_status s = seawall_breaker_try_acquire(b, now, &p, &r);
    if (now - began > 30000000000ull) {
      fprintf(stderr, "child %ld: no progress in 30 s\n", (long)getpid());
      rep.error = 2;
      break;
    }
    if (s == SEAWALL_STATUS_REJECTED) {
      rep.rejected++;
      /* Only open rejections carry a retry-after, never longer than an opening. */
      if ((r.state == SEAWALL_STATE_OPEN) != (r.retry_after_ns != SEAWALL_NONE) ||
          (r.state == SEAWALL_STATE_OPEN && r.retry_after_ns > OPEN_NS) ||
          r.state == SEAWALL_STATE_CLOSED) {
        __atomic_add_fetch(&ctl->violations, 1, __ATOMIC_SEQ_CST);
      }
      continue;
    }
    if (s != SEAWALL_STATUS_OK) {
      fprintf(stderr, "child %ld: acquire: %s\n", (long)getpid(), seawall_status_name(s));
      rep.error = 3;
      break;
    }
    rep.admitted++;
    {
      seawall_outcome outcome;
      if (p.epoch == 2 || p.epoch == 4) {
        int64_t inflight = __atomic_add_fetch(&ctl->probes_in_flight[p.epoch], 1, __ATOMIC_SEQ_CST);
        raise_max(&ctl->max_probes[p.epoch], inflight);
        if (inflight > MAX_PROBES) __atomic_add_fetch(&ctl->violations, 1, __ATOMIC_SEQ_CST);
        sched_yield(); /* hold the probe while the others try */
        __atomic_sub_fetch(&ctl->probes_in_flight[p.epoch], 1, __ATOMIC_SEQ_CST);
      }
      switch (p.epoch) {
        case 0:
        case 2:
          outcome = SEAWALL_OUTCOME_FAILURE;
          break;
        case 4:
        case 5:
          outcome = SEAWALL_OUTCOME_SUCCESS;
          break;
        default: /* admitted while open, or a history we did not plan */
          __atomic_add_fetch(&ctl->violations, 1, __ATOMIC_SEQ_CST);
          outcome = SEAWALL_OUTCOME_SUCCESS;
          break;
      }
      s = seawall_breaker_record(b, p, outcome, 1000, seawall_now_ns());
      if (s != SEAWALL_STATUS_OK) {
        fprintf(stderr, "child %ld: record: %s\n", (long)getpid(), seawall_status_name(s));
        rep.error = 4;
        break;
      }
      if (outcome == SEAWALL_OUTCOME_SUCCESS) rep.successes++; else rep.failures++;
      if (rep.admitted % 64 == 0) {
        if (seawall_breaker_record(b, p, outcome, 1000, seawall_now_ns()) ==
            SEAWALL_STATUS_PERMIT_ALREADY_USED) {
          rep.reuse_refused++;
        } else {
          rep.error = 5;
          break;
        }
      }
      if (p.epoch == 5) closed_calls++;
    }
  }
done:
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) rep.error = 6;
  seawall_breaker_free(b);
  _exit(rep.error == 0 ? 0 : 10 + (int)rep.error);
}

int main(int argc, char **argv) {
  int processes = argc > 1 ? atoi(argv[1]) : 6;
  uint64_t quota = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
  char name[64];
  int start[2], i;
  int (*reports)[2];
  pid_t *pids;
  struct control *ctl;
  struct child_report sum;
  seawall_breaker_config cfg = config();
  seawall_breaker *b = NULL;
  seawall_breaker_metrics m;
  bool created = true;
  uint64_t creators = 0, operations, expected_reuse = 0;

  if (processes < 4) processes = 4;
  if (!seawall_shared_supported()) {
    printf("multiprocess: no native 128-bit atomics here: sharing is refused, nothing to run\n");
    CHECK_STATUS(seawall_breaker_open_shared("c-mp-refused", &cfg, &b),
                 SEAWALL_STATUS_NOT_LOCK_FREE);
    return report("multiprocess");
  }
  sprintf(name, "c-multiprocess-%ld", (long)getpid());
  seawall_breaker_unlink_shared(name);
  ctl = mmap(NULL, sizeof *ctl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (ctl == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  memset(ctl, 0, sizeof *ctl);
  pids = calloc((size_t)processes, sizeof *pids);
  reports = calloc((size_t)processes, sizeof *reports);
  if (pids == NULL || reports == NULL || pipe(start) != 0) {
    perror("setup");
    return 1;
  }
  for (i = 0; i < processes; i++) {
    if (pipe(reports[i]) != 0) {
      perror("pipe");
      return 1;
    }
    pids[i] = fork();
    if (pids[i] == 0) {
      close(start[1]);
      close(reports[i][0]);
      child(name, start[0], reports[i][1], ctl, quota);
    }
    close(reports[i][1]);
  }
  close(start[0]);
  close(start[1]); /* go */

  memset(&sum, 0, sizeof sum);
  for (i = 0; i < processes; i++) {
    struct child_report rep;
    int status = 0;
    ssize_t got = read(reports[i][0], &rep, sizeof rep);
    CHECK(got == (ssize_t)sizeof rep);
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (got != (ssize_t)sizeof rep) continue;
    CHECK_U64(rep.error, 0);
    creators += rep.created;
    sum.admitted += rep.admitted;
    sum.rejected += rep.rejected;
    sum.successes += rep.successes;
    sum.failures += rep.failures;
    sum.reuse_refused += rep.reuse_refused;
    expected_reuse += rep.admitted / 64;
    close(reports[i][0]);
  }

  /* Attach (never create) and compare the breaker with what the children did. */
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_breaker_get_metrics(b, seawall_now_ns(), &m), SEAWALL_STATUS_OK);
  CHECK_U64(creators, 1);
  CHECK_U64(m.admitted, sum.admitted);
  CHECK_U64(m.rejected, sum.rejected);
  CHECK_U64(m.successes, sum.successes);
  CHECK_U64(m.failures, sum.failures);
  CHECK_U64(m.ignored, 0);
  CHECK_U64(m.permits_outstanding, 0);
  CHECK_U64(m.transitions, 5); /* open, half-open, reopen, half-open, close: once each */
  CHECK_U64(m.epoch, 5);
  CHECK(m.state == SEAWALL_STATE_CLOSED);
  CHECK_U64(sum.reuse_refused, expected_reuse); /* every 64th permit of each child */
  CHECK(sum.reuse_refused > 0);
  CHECK_U64(ctl->violations, 0);
  CHECK(ctl->max_probes[2] >= 1 && ctl->max_probes[2] <= MAX_PROBES);
  CHECK(ctl->max_probes[4] >= 1 && ctl->max_probes[4] <= MAX_PROBES);
  operations = sum.admitted + sum.rejected;
  printf("multiprocess: %d processes, %" PRIu64 " operations (%" PRIu64 " admitted, %" PRIu64
         " rejected, %" PRIu64 " second uses refused), creators %" PRIu64
         ", transitions %" PRIu64 ", max probes in flight %" PRId64 " and %" PRId64
         " (limit %d), violations %" PRId64 "\n",
         processes, operations, sum.admitted, sum.rejected, sum.reuse_refused, creators,
         m.transitions, ctl->max_probes[2], ctl->max_probes[4], MAX_PROBES, ctl->violations);
  seawall_breaker_free(b);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  free(pids);
  free(reports);
  munmap(ctl, sizeof *ctl);
  return report("multiprocess");
}
