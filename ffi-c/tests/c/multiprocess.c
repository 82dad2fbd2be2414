/* N processes hammer one breaker, then one semaphore, shared through /dev/shm
 * (DESIGN §8).
 *
 *   multiprocess [processes (>= 4, default 6)] [closed calls per process (default 200000)]
 *                [semaphore operations per process (default: closed calls / 10, >= 200)]
 *
 * All children open the region at the same instant (exactly one may create it).
 * The outcome of each call follows the epoch of its permit, so the breaker must
 * go through exactly this history, whatever the interleaving:
 *   epoch 0 closed     every call fails          → opens once (epoch 2)
 *   epoch 3 half-open  probes fail               → reopens     (epoch 4)
 *   epoch 5 half-open  probes succeed (3 needed) → closes      (epoch 6)
 *   epoch 6 closed     every call succeeds, until each child made its quota.
 * (Half-open epochs are odd, all others even.) A permit admitted in an open
 * epoch (2, 4) or a later one is a violation. Probes
 * in flight are counted per epoch in memory shared by the children (incremented
 * after admission, decremented before recording, so the count can only exceed
 * half_open_max_calls if the breaker admitted too many). Each child sends its own
 * counts through a pipe; the parent checks they add up to the breaker's totals.
 * Every 64th permit is recorded twice: the second use must be refused.
 *
 * The semaphore (3 permits, a queue of 3, low priority shed at 1): every process
 * mixes try-acquires, enqueues whose tickets it polls a random number of times
 * and then cancels, and blocking acquires with timeouts of 0.1 to 2 ms, at all
 * four priorities (more processes than permits). A counter in shared memory,
 * incremented after a permit is obtained and decremented before it is
 * released, must never exceed 3; every snapshot must show active <= 3 and
 * queued <= 3. One more process takes a
 * permit and a ticket and kills itself; the parent reclaims both while the
 * others go on. At the end active = queued = 0, no permit or ticket is
 * outstanding, and each process's permits obtained = its releases, its tickets
 * = granted + cancelled + passed on. Every 32nd release is repeated: refused.
 * Whether that mix issues any ticket is up to timing (under a sanitizer the
 * queue can stay full of blocking waiters), so a hand-off from one process's
 * release to another's ticket is first checked step by step (sem_handoff). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#include <signal.h>
#include <time.h>

#define MAX_PROBES 2
#define OPEN_NS 20000000ull /* 20 ms */
#define EPOCHS 8
#define SEM_MAX 3
#define SEM_QUEUE 3

struct control {
  int64_t probes_in_flight[EPOCHS];
  int64_t max_probes[EPOCHS];
  int64_t violations;
  int64_t sem_in_use;
  int64_t sem_max_in_use;
  int64_t sem_max_queued;
  int64_t sem_violations;
};

struct sem_report {
  uint64_t operations;
  uint64_t obtained; /* permits: immediate, granted tickets, blocking acquires */
  uint64_t immediate;
  uint64_t queued;
  uint64_t granted;
  uint64_t cancelled;
  uint64_t passed_on;
  uint64_t waited;
  uint64_t timed_out;
  uint64_t shed;
  uint64_t full;
  uint64_t released;
  uint64_t second_release_refused;
  uint64_t error; /* 0 = fine */
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
      if (p.epoch == 3 || p.epoch == 5) {
        int64_t inflight = __atomic_add_fetch(&ctl->probes_in_flight[p.epoch], 1, __ATOMIC_SEQ_CST);
        raise_max(&ctl->max_probes[p.epoch], inflight);
        if (inflight > MAX_PROBES) __atomic_add_fetch(&ctl->violations, 1, __ATOMIC_SEQ_CST);
        sched_yield(); /* hold the probe while the others try */
        __atomic_sub_fetch(&ctl->probes_in_flight[p.epoch], 1, __ATOMIC_SEQ_CST);
      }
      switch (p.epoch) {
        case 0:
        case 3:
          outcome = SEAWALL_OUTCOME_FAILURE;
          break;
        case 5:
        case 6:
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
      if (p.epoch == 6) closed_calls++;
    }
  }
done:
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) rep.error = 6;
  seawall_breaker_free(b);
  _exit(rep.error == 0 ? 0 : 10 + (int)rep.error);
}

static seawall_semaphore_config sem_config(void) {
  seawall_semaphore_config c = seawall_semaphore_config_default();
  c.max_concurrent = SEM_MAX;
  c.max_queue = SEM_QUEUE;
  c.low_share_ppm = 250000; /* limit max(1, floor(0.75)) = 1 of 3: shed */
  return c;
}

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* The bounds, read from one snapshot (one atomic word). */
static void check_bounds(const seawall_semaphore *s, struct control *ctl) {
  seawall_semaphore_snapshot snap;
  if (seawall_semaphore_get_snapshot(s, &snap) != SEAWALL_STATUS_OK || snap.active > SEM_MAX ||
      snap.queued > SEM_QUEUE) {
    __atomic_add_fetch(&ctl->sem_violations, 1, __ATOMIC_SEQ_CST);
    return;
  }
  raise_max(&ctl->sem_max_queued, (int64_t)snap.queued);
}

/* Hold a permit a moment, counted in shared memory, then release it. */
static int hold_and_release(const seawall_semaphore *s, seawall_semaphore_permit p,
                            struct control *ctl, struct sem_report *rep) {
  int64_t in_use = __atomic_add_fetch(&ctl->sem_in_use, 1, __ATOMIC_SEQ_CST);
  raise_max(&ctl->sem_max_in_use, in_use);
  if (in_use > SEM_MAX) __atomic_add_fetch(&ctl->sem_violations, 1, __ATOMIC_SEQ_CST);
  rep->obtained++;
  /* Hold it 20 to 80 us, so the processes overlap even where each would run its
   * whole loop within one time slice (sanitizers, valgrind). */
  {
    struct timespec hold = {0, 20000 + (long)(rep->obtained % 4) * 20000};
    nanosleep(&hold, NULL);
  }
  __atomic_sub_fetch(&ctl->sem_in_use, 1, __ATOMIC_SEQ_CST);
  if (seawall_semaphore_release(s, p) != SEAWALL_STATUS_OK) return 0;
  rep->released++;
  if (rep->released % 32 == 0) {
    if (seawall_semaphore_release(s, p) != SEAWALL_STATUS_PERMIT_ALREADY_USED) return 0;
    rep->second_release_refused++;
  }
  return 1;
}

static void sem_child(const char *name, int start_fd, int report_fd, struct control *ctl,
                      uint64_t ops) {
  struct sem_report rep;
  seawall_semaphore_config cfg = sem_config();
  seawall_semaphore *s = NULL;
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
  char go;
  ssize_t n;

  memset(&rep, 0, sizeof rep);
  n = read(start_fd, &go, 1);
  (void)n;
  if (seawall_semaphore_open_shared(name, &cfg, &s) != SEAWALL_STATUS_OK) {
    fprintf(stderr, "sem child %ld: open: %s\n", (long)getpid(), seawall_last_error_message());
    rep.error = 1;
    goto done;
  }
  for (rep.operations = 0; rep.operations < ops && rep.error == 0; rep.operations++) {
    uint64_t r = xorshift(&rng);
    seawall_priority prio = (seawall_priority)(r % 4);
    seawall_semaphore_permit p;
    seawall_semaphore_ticket t;
    seawall_semaphore_rejection why;
    seawall_status st;
    check_bounds(s, ctl);
    switch ((r >> 8) % 3) {
      case 0: /* try, never wait */
        st = seawall_semaphore_try_acquire(s, prio, &p, &why);
        if (st == SEAWALL_STATUS_OK) {
          rep.immediate++;
          if (!hold_and_release(s, p, ctl, &rep)) rep.error = 2;
        } else if (st == SEAWALL_STATUS_REJECTED) {
          if (why.reason == SEAWALL_REJECT_SHED) rep.shed++; else rep.full++;
          if (why.active > SEM_MAX || why.queued > SEM_QUEUE)
            __atomic_add_fetch(&ctl->sem_violations, 1, __ATOMIC_SEQ_CST);
        } else {
          rep.error = 3;
        }
        break;
      case 1: { /* queue, poll a while, then give up */
        unsigned polls = (unsigned)((r >> 16) % 64), i;
        st = seawall_semaphore_acquire_or_enqueue(s, prio, &p, &t, &why);
        if (st == SEAWALL_STATUS_OK) {
          rep.immediate++;
          if (!hold_and_release(s, p, ctl, &rep)) rep.error = 4;
          break;
        }
        if (st == SEAWALL_STATUS_REJECTED) {
          if (why.reason == SEAWALL_REJECT_SHED) rep.shed++; else rep.full++;
          break;
        }
        if (st != SEAWALL_STATUS_QUEUED) {
          rep.error = 5;
          break;
        }
        rep.queued++;
        for (i = 0; i <= polls; i++) {
          st = seawall_semaphore_poll(s, t, &p);
          if (st != SEAWALL_STATUS_WAITING) break;
          sched_yield();
        }
        if (st == SEAWALL_STATUS_OK) {
          rep.granted++;
          if (!hold_and_release(s, p, ctl, &rep)) rep.error = 6;
        } else if (st == SEAWALL_STATUS_WAITING) {
          st = seawall_semaphore_cancel(s, t);
          if (st == SEAWALL_STATUS_CANCELLED) rep.cancelled++;
          else if (st == SEAWALL_STATUS_PASSED_ON) rep.passed_on++;
          else rep.error = 7;
          if (seawall_semaphore_cancel(s, t) != SEAWALL_STATUS_UNKNOWN_TICKET) rep.error = 8;
        } else {
          rep.error = 9;
        }
        break;
      }
      default: { /* block 0.1 to 2 ms */
        uint64_t timeout = 100000ull + (r >> 20) % 1900000ull;
        st = seawall_semaphore_acquire_timeout(s, prio, timeout, &p, &why);
        if (st == SEAWALL_STATUS_OK) {
          rep.waited++;
          if (!hold_and_release(s, p, ctl, &rep)) rep.error = 10;
        } else if (st == SEAWALL_STATUS_WAIT_TIMED_OUT) {
          rep.timed_out++;
        } else if (st == SEAWALL_STATUS_REJECTED) {
          if (why.reason == SEAWALL_REJECT_SHED) rep.shed++; else rep.full++;
        } else {
          rep.error = 11;
        }
        break;
      }
    }
    if (rep.error != 0) {
      fprintf(stderr, "sem child %ld: error %" PRIu64 " at operation %" PRIu64 ": %s (%s)\n",
              (long)getpid(), rep.error, rep.operations, seawall_status_name(st),
              seawall_last_error_message());
    }
  }
done:
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) rep.error = 12;
  seawall_semaphore_free(s);
  _exit(rep.error == 0 ? 0 : 10 + (int)rep.error);
}

/* Takes one permit and one ticket of the busy semaphore, then dies. */
static void sem_victim(const char *name, int start_fd) {
  seawall_semaphore_config cfg = sem_config();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit p, q;
  seawall_semaphore_ticket t;
  struct timespec nap = {0, 100000};
  uint64_t began;
  int have_permit = 0;
  char go;
  ssize_t n = read(start_fd, &go, 1);
  (void)n;
  if (seawall_semaphore_open_shared(name, &cfg, &s) != SEAWALL_STATUS_OK) _exit(20);
  began = seawall_now_ns();
  while (seawall_now_ns() - began < 30000000000ull) {
    if (!have_permit) {
      have_permit = seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &p, NULL) ==
                    SEAWALL_STATUS_OK;
    } else {
      seawall_status st =
          seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &q, &t, NULL);
      if (st == SEAWALL_STATUS_QUEUED) kill(getpid(), SIGKILL);
      if (st == SEAWALL_STATUS_OK) seawall_semaphore_release(s, q); /* want a ticket */
    }
    nanosleep(&nap, NULL);
  }
  _exit(21);
}

/* The child's half of sem_handoff; its exit code names the step that failed. */
static void handoff_child(const char *name, int from_parent, int to_parent) {
  seawall_semaphore_config cfg = sem_config();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit p;
  seawall_semaphore_ticket t;
  seawall_semaphore_snapshot snap;
  char byte;
  if (seawall_semaphore_open_shared(name, &cfg, &s) != SEAWALL_STATUS_OK) _exit(30);
  if (seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, &p, &t, NULL) !=
      SEAWALL_STATUS_QUEUED)
    _exit(31);
  if (write(to_parent, "q", 1) != 1 || read(from_parent, &byte, 1) != 1) _exit(32);
  /* The parent released one permit: it went to this, the only waiter. */
  if (seawall_semaphore_poll(s, t, &p) != SEAWALL_STATUS_OK) _exit(33);
  if (seawall_semaphore_get_snapshot(s, &snap) != SEAWALL_STATUS_OK || snap.active != SEM_MAX ||
      snap.queued != 0)
    _exit(34);
  if (seawall_semaphore_release(s, p) != SEAWALL_STATUS_OK) _exit(35);
  seawall_semaphore_free(s);
  _exit(0);
}

/* One hand-off across processes, step by step (DESIGN §5, plus the documented
 * rule that a granted waiter counts as queued until it polls): the parent holds
 * all 3 permits; a child queues (active 3, queued 1); the parent releases one
 * (still active 3, queued 1: granted, not yet polled); the child's poll obtains
 * it (active 3, queued 0) and releases it; the parent releases its last two
 * (active 0). The random phase below may or may not issue tickets, as timing
 * decides; this phase always does. */
static int sem_handoff(void) {
  char name[64], byte = 0;
  int down[2], up[2], i, status = 0;
  seawall_semaphore_config cfg = sem_config();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit held[SEM_MAX], extra;
  seawall_semaphore_rejection why;
  seawall_semaphore_snapshot snap;
  pid_t pid;

  sprintf(name, "c-multiprocess-handoff-%ld", (long)getpid());
  seawall_semaphore_unlink_shared(name);
  if (pipe(down) != 0 || pipe(up) != 0) {
    perror("pipe");
    return 1;
  }
  CHECK_STATUS(seawall_semaphore_open_shared(name, &cfg, &s), SEAWALL_STATUS_OK);
  for (i = 0; i < SEM_MAX; i++)
    CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &held[i], NULL),
                 SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &extra, &why),
               SEAWALL_STATUS_REJECTED);
  CHECK(why.reason == SEAWALL_REJECT_FULL);
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    handoff_child(name, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  CHECK(read(up[0], &byte, 1) == 1 && byte == 'q');
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  CHECK_U64(snap.active, 3);
  CHECK_U64(snap.queued, 1);
  CHECK_U64(snap.tickets_outstanding, 1);
  CHECK_STATUS(seawall_semaphore_release(s, held[0]), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  CHECK_U64(snap.active, 3);
  CHECK_U64(snap.queued, 1);
  CHECK(write(down[1], "r", 1) == 1);
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK_U64(WEXITSTATUS(status), 0);
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  CHECK_U64(snap.active, 2);
  CHECK_U64(snap.queued, 0);
  CHECK_U64(snap.permits_outstanding, 2);
  CHECK_U64(snap.tickets_outstanding, 0);
  CHECK_STATUS(seawall_semaphore_release(s, held[1]), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, held[2]), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  CHECK_U64(snap.active, 0);
  CHECK_U64(snap.permits_outstanding, 0);
  close(down[1]);
  close(up[0]);
  seawall_semaphore_free(s);
  CHECK_STATUS(seawall_semaphore_unlink_shared(name), SEAWALL_STATUS_OK);
  printf("multiprocess semaphore hand-off: queued in a child, granted by the parent's release, "
         "obtained by the child's poll\n");
  return 0;
}

static int sem_phase(int processes, uint64_t ops, struct control *ctl) {
  char name[64];
  int start[2], i;
  int (*reports)[2] = calloc((size_t)processes, sizeof *reports);
  pid_t *pids = calloc((size_t)processes, sizeof *pids), victim;
  struct sem_report sum;
  seawall_semaphore_config cfg = sem_config();
  seawall_semaphore *s = NULL;
  seawall_semaphore_snapshot snap;
  uint64_t reclaimed_permits = 0, reclaimed_tickets = 0, operations, tickets_ended;
  int status = 0, ok_reports = 0;

  sprintf(name, "c-multiprocess-sem-%ld", (long)getpid());
  seawall_semaphore_unlink_shared(name);
  if (pids == NULL || reports == NULL || pipe(start) != 0) {
    perror("setup");
    return 1;
  }
  CHECK_STATUS(seawall_semaphore_open_shared(name, &cfg, &s), SEAWALL_STATUS_OK);
  fflush(stdout); /* children must not print the parent's buffered lines again */
  for (i = 0; i < processes; i++) {
    if (pipe(reports[i]) != 0) {
      perror("pipe");
      return 1;
    }
    pids[i] = fork();
    if (pids[i] == 0) {
      int report_fd = reports[i][1];
      close(start[1]);
      close(reports[i][0]);
      free(pids); /* the parent's bookkeeping: not the child's to keep */
      free(reports);
      sem_child(name, start[0], report_fd, ctl, ops);
    }
    close(reports[i][1]);
  }
  victim = fork();
  if (victim == 0) {
    close(start[1]);
    free(pids);
    free(reports);
    sem_victim(name, start[0]);
  }
  close(start[0]);
  close(start[1]); /* go */

  /* The victim dies holding a permit and a ticket. The others, refused or
   * queued meanwhile, give them back by themselves (DESIGN §8, self-healing);
   * an explicit reclaim now finds what they have not given back yet. Either
   * way both come back once: the end state below is whole. */
  CHECK(waitpid(victim, &status, 0) == victim);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  CHECK_STATUS(seawall_semaphore_reclaim_abandoned(s, &reclaimed_permits, &reclaimed_tickets),
               SEAWALL_STATUS_OK);
  CHECK(reclaimed_permits <= 1);
  CHECK(reclaimed_tickets <= 1);

  memset(&sum, 0, sizeof sum);
  for (i = 0; i < processes; i++) {
    struct sem_report rep;
    ssize_t got = read(reports[i][0], &rep, sizeof rep);
    CHECK(got == (ssize_t)sizeof rep);
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(reports[i][0]);
    if (got != (ssize_t)sizeof rep) continue;
    CHECK_U64(rep.error, 0);
    CHECK_U64(rep.operations, ops);
    /* Per process: every permit released once, every ticket ended once. */
    CHECK_U64(rep.obtained, rep.immediate + rep.granted + rep.waited);
    CHECK_U64(rep.released, rep.obtained);
    CHECK_U64(rep.queued, rep.granted + rep.cancelled + rep.passed_on);
    CHECK_U64(rep.second_release_refused, rep.released / 32);
    CHECK_U64(rep.operations, rep.immediate + rep.queued + rep.waited + rep.timed_out +
                                  rep.shed + rep.full);
    sum.operations += rep.operations;
    sum.obtained += rep.obtained;
    sum.immediate += rep.immediate;
    sum.queued += rep.queued;
    sum.granted += rep.granted;
    sum.cancelled += rep.cancelled;
    sum.passed_on += rep.passed_on;
    sum.waited += rep.waited;
    sum.timed_out += rep.timed_out;
    sum.shed += rep.shed;
    sum.full += rep.full;
    sum.released += rep.released;
    sum.second_release_refused += rep.second_release_refused;
    ok_reports++;
  }
  CHECK_U64(ok_reports, processes);
  /* Nothing leaked: every holder and waiter is gone. */
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  CHECK_U64(snap.active, 0);
  CHECK_U64(snap.queued, 0);
  CHECK_U64(snap.permits_outstanding, 0);
  CHECK_U64(snap.tickets_outstanding, 0);
  CHECK_U64(ctl->sem_in_use, 0);
  CHECK_U64(ctl->sem_violations, 0);
  CHECK(ctl->sem_max_in_use >= 1 && ctl->sem_max_in_use <= SEM_MAX);
  CHECK(ctl->sem_max_queued <= SEM_QUEUE);
  CHECK(sum.shed > 0); /* low priority beyond its one permit */
  CHECK_U64(sum.released, sum.obtained);
  operations = sum.operations;
  tickets_ended = sum.granted + sum.cancelled + sum.passed_on;
  printf("multiprocess semaphore: %d processes (+1 killed), %" PRIu64 " operations: %" PRIu64
         " permits obtained (%" PRIu64 " at once, %" PRIu64 " by ticket, %" PRIu64
         " by blocking wait) and released, %" PRIu64 " tickets (%" PRIu64 " granted, %" PRIu64
         " cancelled, %" PRIu64 " passed on), %" PRIu64 " timed out, %" PRIu64 " shed, %" PRIu64
         " full, %" PRIu64 " second releases refused; max in use %" PRId64 " (limit %d), max queued %" PRId64
         " (limit %d); reclaimed %" PRIu64 " permit and %" PRIu64 " ticket of the killed process; at the end active %u, queued %u; violations %" PRId64 "\n",
         processes, operations, sum.obtained, sum.immediate, sum.granted, sum.waited, sum.queued,
         sum.granted, sum.cancelled, sum.passed_on, sum.timed_out, sum.shed, sum.full,
         sum.second_release_refused, ctl->sem_max_in_use, SEM_MAX, ctl->sem_max_queued, SEM_QUEUE,
         reclaimed_permits, reclaimed_tickets, snap.active, snap.queued, ctl->sem_violations);
  CHECK_U64(tickets_ended, sum.queued);
  seawall_semaphore_free(s);
  CHECK_STATUS(seawall_semaphore_unlink_shared(name), SEAWALL_STATUS_OK);
  free(pids);
  free(reports);
  return 0;
}

int main(int argc, char **argv) {
  int processes = argc > 1 ? atoi(argv[1]) : 6;
  uint64_t quota = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
  uint64_t sem_ops = argc > 3 ? strtoull(argv[3], NULL, 10) : quota / 10;
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
  if (sem_ops < 200) sem_ops = 200;
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
  CHECK_U64(m.epoch, 6); /* 2, 3, 4, 5, 6: half-open epochs odd, the others even */
  CHECK(m.state == SEAWALL_STATE_CLOSED);
  CHECK_U64(sum.reuse_refused, expected_reuse); /* every 64th permit of each child */
  CHECK(sum.reuse_refused > 0);
  CHECK_U64(ctl->violations, 0);
  CHECK(ctl->max_probes[3] >= 1 && ctl->max_probes[3] <= MAX_PROBES);
  CHECK(ctl->max_probes[5] >= 1 && ctl->max_probes[5] <= MAX_PROBES);
  operations = sum.admitted + sum.rejected;
  printf("multiprocess: %d processes, %" PRIu64 " operations (%" PRIu64 " admitted, %" PRIu64
         " rejected, %" PRIu64 " second uses refused), creators %" PRIu64
         ", transitions %" PRIu64 ", max probes in flight %" PRId64 " and %" PRId64
         " (limit %d), violations %" PRId64 "\n",
         processes, operations, sum.admitted, sum.rejected, sum.reuse_refused, creators,
         m.transitions, ctl->max_probes[3], ctl->max_probes[5], MAX_PROBES, ctl->violations);
  seawall_breaker_free(b);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  free(pids);
  free(reports);
  if (sem_handoff() != 0) return 1;
  if (sem_phase(processes, sem_ops, ctl) != 0) return 1;
  munmap(ctl, sizeof *ctl);
  return report("multiprocess");
}
