/* The C ABI of seawall, from C: versions, every NULL argument, every invalid
 * configuration field, a breaker scenario worked out by hand from DESIGN.md §3,
 * single-use permits, deadlines (§6), the semaphore's protocol with single-use
 * permits and tickets (§5), the retry budget, throttle, backoff and retry
 * decision (§4), health (§7), caller memory and named shared regions (§8), and
 * the reclaim of permits and tickets of killed processes. Every expected value
 * below is written from the spec, not read back from the library. */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull
#define SEC 1000000000ull

static uint64_t c_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void versions_and_clock(void) {
  char want[128];
  uint64_t before, now, after;

  CHECK(seawall_abi_version() == SEAWALL_ABI_VERSION);
  CHECK_STATUS(seawall_abi_check(SEAWALL_ABI_VERSION), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_abi_check(SEAWALL_ABI_VERSION + 1), SEAWALL_STATUS_ABI_MISMATCH);
  sprintf(want, "program compiled against seawall.h ABI version %u, library is ABI version %u",
          (unsigned)(SEAWALL_ABI_VERSION + 1), (unsigned)SEAWALL_ABI_VERSION);
  CHECK_MESSAGE(want);
  CHECK(strcmp(seawall_version(), SEAWALL_VERSION) == 0);
  sprintf(want, "%d.%d.%d", SEAWALL_VERSION_MAJOR, SEAWALL_VERSION_MINOR, SEAWALL_VERSION_PATCH);
  CHECK(strcmp(seawall_version(), want) == 0);

  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_OK), "SEAWALL_STATUS_OK") == 0);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_PERMIT_ALREADY_USED),
               "SEAWALL_STATUS_PERMIT_ALREADY_USED") == 0);
  CHECK(strcmp(seawall_status_name(999), "unknown") == 0);
  CHECK(strcmp(seawall_state_name(SEAWALL_STATE_HALF_OPEN), "half_open") == 0);
  CHECK(strcmp(seawall_state_name(SEAWALL_STATE_FORCED_OPEN), "forced_open") == 0);
  CHECK(strcmp(seawall_state_name(77), "unknown") == 0);
  /* The status values are ABI: fixed numbers. */
  CHECK(SEAWALL_STATUS_OK == 0 && SEAWALL_STATUS_NULL_ARGUMENT == 1 &&
        SEAWALL_STATUS_INVALID_CONFIG == 2 && SEAWALL_STATUS_REJECTED == 3 &&
        SEAWALL_STATUS_PERMIT_ALREADY_USED == 4 && SEAWALL_STATUS_ABI_MISMATCH == 5 &&
        SEAWALL_STATUS_IO_ERROR == 6 && SEAWALL_STATUS_PANIC == 7);

  /* seawall_now_ns is CLOCK_MONOTONIC: bracketed by our own readings of it. */
  before = c_monotonic_ns();
  now = seawall_now_ns();
  after = c_monotonic_ns();
  CHECK(before <= now && now <= after);
}

static seawall_breaker_config count_config(uint32_t size, uint64_t minimum) {
  seawall_breaker_config c = seawall_breaker_config_default();
  c.window_kind = SEAWALL_WINDOW_COUNT;
  c.window_size = size;
  c.window_bucket_width_ns = 0; /* time windows only */
  c.minimum_calls = minimum;
  return c;
}

static void default_config(void) {
  seawall_breaker_config c = seawall_breaker_config_default();
  /* DESIGN §3 defaults. */
  CHECK(c.window_kind == SEAWALL_WINDOW_TIME);
  CHECK_U64(c.window_size, 10);
  CHECK_U64(c.window_bucket_width_ns, 1 * SEC);
  CHECK_U64(c.minimum_calls, 20);
  CHECK_U64(c.failure_rate_threshold_ppm, 500000);
  CHECK_U64(c.slow_call_rate_threshold_ppm, 1000000);
  CHECK_U64(c.slow_call_duration_ns, SEAWALL_NONE);
  CHECK_U64(c.consecutive_failures, SEAWALL_NONE);
  CHECK_U64(c.open_duration_ns, 30 * SEC);
  CHECK_U64(c.open_backoff_multiplier_ppm, 1000000);
  CHECK_U64(c.max_open_duration_ns, 300 * SEC);
  CHECK_U64(c.open_jitter_factor_ppm, 0);
  CHECK_U64(c.half_open_max_calls, 1);
  CHECK_U64(c.half_open_success_threshold, 1);
  CHECK_U64(c.half_open_max_wait_ns, SEAWALL_NONE);
}

static void null_arguments(void) {
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *b = NULL;
  seawall_breaker *out = (seawall_breaker *)&cfg; /* must be reset to NULL */
  seawall_permit p;
  seawall_state st;
  uint32_t epoch;
  uint64_t ns;
  bool flag;
  seawall_breaker_metrics m;
  seawall_deadline d = {0, 10};
  char mem[64];

  CHECK_STATUS(seawall_breaker_new(NULL, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("config is NULL");
  CHECK(out == NULL);
  CHECK_STATUS(seawall_breaker_new(&cfg, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK(b != NULL);

  CHECK_STATUS(seawall_breaker_try_acquire(NULL, 0, &p, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("breaker is NULL");
  CHECK_STATUS(seawall_breaker_try_acquire(b, 0, NULL, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_permit is NULL");
  CHECK_STATUS(seawall_breaker_try_acquire(b, 0, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(NULL, p, SEAWALL_OUTCOME_SUCCESS, 0, 0),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 0), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_state(NULL, &st), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_state(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_epoch(NULL, &epoch), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_epoch(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_retry_after(NULL, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_retry_after(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_ns is NULL");
  CHECK_STATUS(seawall_breaker_get_metrics(NULL, 0, &m), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_metrics(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_created(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_config(NULL, &cfg), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_config(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_force_open(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_disable(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_reset(NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  out = (seawall_breaker *)&cfg;
  CHECK_STATUS(seawall_breaker_open_shared(NULL, &cfg, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("name is NULL");
  CHECK(out == NULL);
  CHECK_STATUS(seawall_breaker_open_shared("x", NULL, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_open_shared("x", &cfg, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_init_in(NULL, 4096, &cfg, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("mem is NULL");
  CHECK_STATUS(seawall_breaker_init_in(mem, sizeof mem, NULL, &out),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_init_in(mem, sizeof mem, &cfg, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_attach(NULL, 4096, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  CHECK_STATUS(seawall_deadline_start(10, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_remaining(NULL, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("deadline is NULL");
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_expired(NULL, 0, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_expired(&d, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_allocate(NULL, 1, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_allocate(&d, 1, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_child(NULL, 1, 0, &d), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("parent is NULL");
  CHECK_STATUS(seawall_deadline_child(&d, 1, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  seawall_breaker_free(NULL); /* fine */
  seawall_breaker_free(b);
}

/* One invalid field: the status and the exact message naming it. */
static void invalid(seawall_breaker_config c, const char *message) {
  seawall_breaker *b = (seawall_breaker *)&c;
  CHECK_STATUS(seawall_breaker_new(&c, &b), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(b == NULL);
}

static void invalid_configs(void) {
  seawall_breaker_config c;

  c = count_config(0, 10);
  invalid(c, "invalid window.size: must not be zero");
  c = count_config(SEAWALL_COUNT_WINDOW_MAX + 1, 10);
  invalid(c, "invalid window.size: must be between 1 and 1024");
  c = seawall_breaker_config_default();
  c.window_size = SEAWALL_TIME_WINDOW_MAX_BUCKETS + 1;
  invalid(c, "invalid window.buckets: must be between 1 and 128");
  c = seawall_breaker_config_default();
  c.window_size = 0;
  invalid(c, "invalid window.buckets: must not be zero");
  c = seawall_breaker_config_default();
  c.window_bucket_width_ns = 0;
  invalid(c, "invalid window.bucket_width: must not be zero");
  c = seawall_breaker_config_default();
  c.window_kind = 2;
  invalid(c, "invalid window.kind: 2 is neither SEAWALL_WINDOW_COUNT (0) nor SEAWALL_WINDOW_TIME (1)");
  c = count_config(10, 0);
  invalid(c, "invalid minimum_calls: must not be zero");
  c = count_config(10, 4294967296ull);
  invalid(c, "invalid minimum_calls: must be between 1 and 4294967295");
  c = count_config(10, 10);
  c.failure_rate_threshold_ppm = 1000001;
  invalid(c, "invalid failure_rate_threshold: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.slow_call_rate_threshold_ppm = 2000000;
  invalid(c, "invalid slow_call_rate_threshold: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.consecutive_failures = 0;
  invalid(c, "invalid consecutive_failures: must not be zero");
  c = count_config(10, 10);
  c.consecutive_failures = 4194304;
  invalid(c, "invalid consecutive_failures: must be between 1 and 4194303");
  c = count_config(10, 10);
  c.open_duration_ns = 0;
  invalid(c, "invalid open_duration: must not be zero");
  c = count_config(10, 10);
  c.open_backoff_multiplier_ppm = 999999;
  invalid(c, "invalid open_backoff_multiplier: must be between 1000000 and 18446744073709551615");
  c = count_config(10, 10);
  c.max_open_duration_ns = c.open_duration_ns - 1;
  invalid(c, "invalid max_open_duration: must not be less than open_duration");
  c = count_config(10, 10);
  c.open_jitter_factor_ppm = 1000001;
  invalid(c, "invalid open_jitter_factor: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.half_open_max_calls = 0;
  invalid(c, "invalid half_open_max_calls: must not be zero");
  c = count_config(10, 10);
  c.half_open_max_calls = 2048;
  invalid(c, "invalid half_open_max_calls: must be between 1 and 2047");
  c = count_config(10, 10);
  c.half_open_success_threshold = 0;
  invalid(c, "invalid half_open_success_threshold: must not be zero");
  c = count_config(10, 10);
  c.half_open_max_wait_ns = 0;
  invalid(c, "invalid half_open_max_wait: must not be zero");
}

static seawall_breaker_metrics metrics(const seawall_breaker *b, uint64_t now) {
  seawall_breaker_metrics m;
  memset(&m, 0xAB, sizeof m);
  CHECK_STATUS(seawall_breaker_get_metrics(b, now, &m), SEAWALL_STATUS_OK);
  return m;
}

static seawall_state state(const seawall_breaker *b) {
  seawall_state s = 99;
  CHECK_STATUS(seawall_breaker_state(b, &s), SEAWALL_STATUS_OK);
  return s;
}

/* One call: acquire at `now` and record `outcome` at once. */
static void call(const seawall_breaker *b, uint64_t now, seawall_outcome outcome) {
  seawall_permit p;
  CHECK_STATUS(seawall_breaker_try_acquire(b, now, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, outcome, 0, now), SEAWALL_STATUS_OK);
}

static void breaker_lifecycle(void) {
  /* Count window 10, minimum 10, failure rate 50 %, open 1 s; two probes in
   * half-open, two successes close. DESIGN §3.1 oracle: 5 F + 5 S opens on the
   * 10th call. */
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *b = NULL;
  seawall_permit p1, p2, p3, before;
  seawall_rejection r;
  seawall_breaker_metrics m, m2;
  uint64_t t0 = 5 * SEC, ns;
  uint32_t epoch;
  int i;

  cfg.open_duration_ns = 1 * SEC;
  cfg.half_open_max_calls = 2;
  cfg.half_open_success_threshold = 2;
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);

  for (i = 0; i < 5; i++) call(b, t0, SEAWALL_OUTCOME_FAILURE);
  for (i = 0; i < 4; i++) call(b, t0, SEAWALL_OUTCOME_SUCCESS);
  m = metrics(b, t0);
  CHECK(m.state == SEAWALL_STATE_CLOSED); /* 9 calls < minimum 10: no decision */
  CHECK_U64(m.window_calls, 9);
  CHECK_U64(m.window_failures, 5);
  CHECK_U64(m.failure_rate_ppm, 555555); /* floor(5/9 · 10^6) */
  CHECK_U64(m.retry_after_ns, SEAWALL_NONE);
  CHECK_U64(m.admitted, 9);
  CHECK_U64(m.permits_outstanding, 0);

  call(b, t0, SEAWALL_OUTCOME_SUCCESS); /* 10th: 50 % → open until t0 + 1 s */
  CHECK(state(b) == SEAWALL_STATE_OPEN);
  m = metrics(b, t0 + 400 * MS);
  CHECK_U64(m.transitions, 1);
  CHECK_U64(m.openings, 1);
  CHECK_U64(m.retry_after_ns, 600 * MS);

  memset(&r, 0, sizeof r);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 400 * MS, &p1, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_OPEN);
  CHECK_U64(r.retry_after_ns, 600 * MS);
  CHECK_STATUS(seawall_breaker_retry_after(b, t0 + 999 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 1 * MS);

  /* At open_until: two probes admitted, the third rejected in half-open. */
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p1, &r), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_HALF_OPEN);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p2, &r), SEAWALL_STATUS_OK);
  CHECK_U64(p1.epoch, 3); /* closed 0 → open 2 → half-open 3 (half-open epochs are odd) */
  CHECK_U64(p2.epoch, 3);
  CHECK(p1.id != p2.id);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p3, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_HALF_OPEN);
  CHECK_U64(r.retry_after_ns, SEAWALL_NONE);

  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + SEC);
  CHECK(m.state == SEAWALL_STATE_HALF_OPEN);
  CHECK_U64(m.half_open_in_flight, 1);
  CHECK_U64(m.half_open_successes, 1);
  CHECK_U64(m.permits_outstanding, 1);

  /* A permit used twice: an error code, and nothing changes. */
  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_FAILURE, 0, t0 + SEC),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_MESSAGE_HAS("already used");
  m2 = metrics(b, t0 + SEC);
  CHECK(memcmp(&m, &m2, sizeof m) == 0);

  CHECK_STATUS(seawall_breaker_record(b, p2, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_epoch(b, &epoch), SEAWALL_STATUS_OK);
  CHECK_U64(epoch, 4);
  m = metrics(b, t0 + SEC);
  CHECK_U64(m.transitions, 3);
  CHECK_U64(m.admitted, 12);
  CHECK_U64(m.rejected, 2);
  CHECK_U64(m.successes, 7);
  CHECK_U64(m.failures, 5);
  CHECK_U64(m.window_calls, 0); /* closing starts an empty window */
  CHECK_STATUS(seawall_breaker_record(b, p2, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);

  /* An unknown outcome or an altered permit is refused and leaves it usable. */
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p3, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p3, 7, 0, t0 + SEC), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid outcome 7: use SEAWALL_OUTCOME_SUCCESS (0), _FAILURE (1) or _IGNORED (2)");
  before = p3;
  p3.epoch += 1;
  CHECK_STATUS(seawall_breaker_record(b, p3, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("altered");
  p3 = before;
  p3.id = (p3.id & ~0xFFFFFFFFull) | 5000u; /* a slot the table does not have */
  CHECK_STATUS(seawall_breaker_record(b, p3, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("not a permit of this breaker");
  CHECK_STATUS(seawall_breaker_record(b, before, SEAWALL_OUTCOME_IGNORED, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + SEC);
  CHECK_U64(m.ignored, 1);
  CHECK_U64(m.permits_outstanding, 0);

  /* Manual control; a permit of the disabled period recorded after reset is
   * stale: it counts in the totals only. */
  CHECK_STATUS(seawall_breaker_force_open(b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 2 * SEC, &p1, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_FORCED_OPEN);
  CHECK_U64(r.retry_after_ns, SEAWALL_NONE);
  CHECK_STATUS(seawall_breaker_disable(b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_DISABLED);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 2 * SEC, &p1, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_FAILURE, 0, t0 + 2 * SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + 2 * SEC);
  CHECK_U64(m.stale, 1);
  CHECK_U64(m.window_calls, 0);
  CHECK_U64(m.transitions, 6);
  seawall_breaker_free(b);
}

static void permits_of_another_breaker_and_exhaustion(void) {
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *a = NULL, *b = NULL;
  seawall_permit p, *held;
  seawall_breaker_metrics m;
  uint32_t i;
  char want[128];

  CHECK_STATUS(seawall_breaker_new(&cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(a, 1, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_FAILURE, 0, 1),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_U64(metrics(b, 1).failures, 0);
  CHECK_STATUS(seawall_breaker_record(a, p, SEAWALL_OUTCOME_SUCCESS, 0, 1), SEAWALL_STATUS_OK);

  /* SEAWALL_BREAKER_MAX_PERMITS outstanding: the next acquire is refused before
   * the breaker is asked (no admission, nothing to give back). */
  held = malloc(sizeof *held * SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_STATUS(seawall_breaker_disable(b), SEAWALL_STATUS_OK);
  for (i = 0; i < SEAWALL_BREAKER_MAX_PERMITS; i++) {
    if (seawall_breaker_try_acquire(b, 2, &held[i], NULL) != SEAWALL_STATUS_OK) break;
  }
  CHECK_U64(i, SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_STATUS(seawall_breaker_try_acquire(b, 2, &p, NULL), SEAWALL_STATUS_PERMITS_EXHAUSTED);
  sprintf(want, "all %u permits of this breaker are outstanding: record the ones you hold",
          (unsigned)SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_MESSAGE(want);
  m = metrics(b, 2);
  CHECK_U64(m.admitted, SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_U64(m.ignored, 0);
  CHECK_U64(m.permits_outstanding, SEAWALL_BREAKER_MAX_PERMITS);
  for (i = 0; i < SEAWALL_BREAKER_MAX_PERMITS; i++) {
    if (seawall_breaker_record(b, held[i], SEAWALL_OUTCOME_SUCCESS, 0, 3) != SEAWALL_STATUS_OK)
      break;
  }
  CHECK_U64(i, SEAWALL_BREAKER_MAX_PERMITS);
  m = metrics(b, 3);
  CHECK_U64(m.permits_outstanding, 0);
  CHECK_U64(m.successes, SEAWALL_BREAKER_MAX_PERMITS);
  free(held);
  seawall_breaker_free(a);
  seawall_breaker_free(b);
}

static void deadlines(void) {
  seawall_deadline d, child;
  uint64_t ns;
  bool expired;
  const uint64_t start = 1000;

  CHECK_STATUS(seawall_deadline_start(0, start, &d), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid deadline.total: must not be zero");
  CHECK_STATUS(seawall_deadline_start(100 * MS, start, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d.start_ns, start);
  CHECK_U64(d.end_ns, start + 100 * MS);
  CHECK_STATUS(seawall_deadline_remaining(&d, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 60 * MS);
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 100 * MS); /* a clock before the start counts as the start */
  CHECK_STATUS(seawall_deadline_remaining(&d, start + 200 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 0);
  CHECK_STATUS(seawall_deadline_expired(&d, start + 100 * MS - 1, &expired), SEAWALL_STATUS_OK);
  CHECK(!expired);
  CHECK_STATUS(seawall_deadline_expired(&d, start + 100 * MS, &expired), SEAWALL_STATUS_OK);
  CHECK(expired); /* exactly at the end */
  CHECK_STATUS(seawall_deadline_allocate(&d, 30 * MS, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 30 * MS);
  CHECK_STATUS(seawall_deadline_allocate(&d, 90 * MS, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 60 * MS);
  /* A child never outlives its parent. */
  CHECK_STATUS(seawall_deadline_child(&d, 200 * MS, start + 50 * MS, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.start_ns, start + 50 * MS);
  CHECK_U64(child.end_ns, start + 100 * MS);
  CHECK_STATUS(seawall_deadline_child(&d, 10 * MS, start + 50 * MS, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.end_ns, start + 60 * MS);
  /* The child may be written over its parent. */
  child = d;
  CHECK_STATUS(seawall_deadline_child(&child, 10 * MS, start, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.end_ns, start + 10 * MS);
  /* Saturating end. */
  CHECK_STATUS(seawall_deadline_start(UINT64_MAX - 5, 10, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d.end_ns, UINT64_MAX);
  /* A deadline that ends before it starts is not one. */
  d.start_ns = 10;
  d.end_ns = 5;
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, &ns), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid deadline: ends (5) before it starts (10)");
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void caller_memory(void) {
  size_t size = seawall_breaker_size(), align = seawall_breaker_align();
  seawall_breaker_config cfg = count_config(4, 4);
  seawall_breaker *a = NULL, *b = NULL;
  seawall_breaker_config got;
  seawall_permit p;
  unsigned char *mem = NULL;
  uint32_t abi;
  bool created;
  int i;

  CHECK(align == 128);
  CHECK(posix_memalign((void **)&mem, align, size + align) == 0);
  memset(mem, 0, size + align);
  CHECK_STATUS(seawall_breaker_init_in(mem + 8, size, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("is not aligned to 128 bytes");
  CHECK_STATUS(seawall_breaker_init_in(mem, size - 1, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("needs at least");
  CHECK_STATUS(seawall_breaker_attach(mem, size, &a), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_STATUS(seawall_breaker_attach(mem, 64, &a), SEAWALL_STATUS_BAD_REGION);

  CHECK_STATUS(seawall_breaker_init_in(mem, size, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_created(a, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_breaker_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_breaker_get_config(b, &got), SEAWALL_STATUS_OK);
  CHECK(memcmp(&got, &cfg, sizeof cfg) == 0);
  /* 4 failures through `a`, seen through `b`; a permit of one handle is
   * recorded through the other, once. */
  for (i = 0; i < 4; i++) call(a, 10, SEAWALL_OUTCOME_FAILURE);
  CHECK(state(b) == SEAWALL_STATE_OPEN);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(a, 11, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 11), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(a, p, SEAWALL_OUTCOME_SUCCESS, 0, 11),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  seawall_breaker_free(b);
  b = NULL;

  /* The documented header: region layout version (3) at byte 12, creator pid at
   * 56 (under the checksum). Another layout is refused; a corrupted header is
   * no region. */
  abi = get_u32(mem + 12);
  CHECK_U64(abi, 3);
  put_u32(mem + 12, abi + 1);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_ABI_MISMATCH);
  CHECK_MESSAGE_HAS("region laid out by seawall region layout version 4");
  put_u32(mem + 12, abi);
  put_u32(mem + 56, get_u32(mem + 56) ^ 1u);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_MESSAGE_HAS("checksum");
  put_u32(mem + 56, get_u32(mem + 56) ^ 1u);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);

  seawall_breaker_free(a);
  seawall_breaker_free(b);
  free(mem);
}

static void named_regions(void) {
  seawall_breaker_config cfg = count_config(4, 4), other = cfg, time_cfg;
  seawall_breaker *a = NULL, *b = NULL, *c = NULL;
  char name[64], stuck[64], path[128], long_name[260];
  bool created;
  unsigned char header[16];
  FILE *f;
  int fd;

  sprintf(name, "c-api-test-%ld", (long)getpid());
  sprintf(stuck, "c-api-stuck-%ld", (long)getpid());
  seawall_breaker_unlink_shared(name);

  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_created(a, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_breaker_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_breaker_force_open(a), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_FORCED_OPEN);

  other.minimum_calls = 3;
  c = (seawall_breaker *)&cfg;
  CHECK_STATUS(seawall_breaker_open_shared(name, &other, &c), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("region was created with another configuration: minimum_calls differs");
  CHECK(c == NULL);
  other = cfg;
  other.jitter_seed ^= 12345; /* each process may draw its own seed */
  CHECK_STATUS(seawall_breaker_open_shared(name, &other, &c), SEAWALL_STATUS_OK);
  seawall_breaker_free(c);
  c = NULL;
  time_cfg = seawall_breaker_config_default();
  CHECK_STATUS(seawall_breaker_open_shared(name, &time_cfg, &c), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("not a time-window circuit breaker");

  /* Another ABI in the file. */
  sprintf(path, "/dev/shm/seawall-breaker-%s", name);
  f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f != NULL) {
    CHECK(fread(header, 1, sizeof header, f) == sizeof header);
    put_u32(header + 12, get_u32(header + 12) + 1);
    CHECK(fseek(f, 0, SEEK_SET) == 0);
    CHECK(fwrite(header, 1, sizeof header, f) == sizeof header);
    fclose(f);
  }
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &c), SEAWALL_STATUS_ABI_MISMATCH);

  /* Unlink: gone for newcomers, attached handles go on. */
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK(access(path, F_OK) != 0);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK(state(a) == SEAWALL_STATE_CLOSED);

  CHECK_STATUS(seawall_breaker_open_shared("a/b", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("invalid region name \"a/b\"");
  CHECK_STATUS(seawall_breaker_open_shared("", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(seawall_breaker_open_shared(".x", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[SEAWALL_REGION_NAME_MAX + 1] = '\0';
  CHECK_STATUS(seawall_breaker_open_shared(long_name, &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  long_name[SEAWALL_REGION_NAME_MAX] = '\0';
  CHECK_STATUS(seawall_breaker_open_shared(long_name, &cfg, &c), SEAWALL_STATUS_OK);
  seawall_breaker_free(c);
  c = NULL;
  CHECK_STATUS(seawall_breaker_unlink_shared(long_name), SEAWALL_STATUS_OK);

  /* A region another process is still building (it holds the file's init lock,
   * as a creator does until it publishes): a bounded wait, then TIMEOUT. The same
   * file once nobody holds the lock can never become a region (4096 bytes, not a
   * breaker's size): refused at once, whatever the timeout. */
  sprintf(path, "/dev/shm/seawall-breaker-%s", stuck);
  fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(ftruncate(fd, 4096) == 0);
    CHECK(flock(fd, LOCK_EX) == 0);
  }
  CHECK(setenv("SEAWALL_SHM_TIMEOUT_MS", "100", 1) == 0);
  CHECK_STATUS(seawall_breaker_open_shared(stuck, &cfg, &c), SEAWALL_STATUS_TIMEOUT);
  CHECK_MESSAGE_HAS("was not initialised within");
  if (fd >= 0) close(fd);
  CHECK_STATUS(seawall_breaker_open_shared(stuck, &cfg, &c), SEAWALL_STATUS_REGION_UNTRUSTED);
  CHECK_MESSAGE_HAS("it is 4096 bytes");
  CHECK(unsetenv("SEAWALL_SHM_TIMEOUT_MS") == 0);
  CHECK_STATUS(seawall_breaker_unlink_shared(stuck), SEAWALL_STATUS_OK);

  seawall_breaker_free(a);
  seawall_breaker_free(b);
}

/* A process killed while it holds a half-open probe: with nobody calling
 * reclaim, the next caller refused in half-open finds it dead, records its
 * permit as ignored and takes the probe slot (DESIGN §8, self-healing); a live
 * process's permit is left alone. */
static void abandoned_permits(void) {
  seawall_breaker_config cfg = count_config(4, 4);
  seawall_breaker *b = NULL;
  seawall_permit mine, p;
  seawall_rejection r;
  seawall_breaker_metrics m;
  uint64_t reclaimed = 99;
  const uint64_t t = 10, probe_at = 10 + SEC;
  char name[64];
  pid_t child;
  int status = 0, i;

  cfg.open_duration_ns = SEC;
  sprintf(name, "c-api-abandoned-%ld", (long)getpid());
  seawall_breaker_unlink_shared(name);
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t, &mine, NULL), SEAWALL_STATUS_OK);
  for (i = 0; i < 4; i++) call(b, t, SEAWALL_OUTCOME_FAILURE); /* opens until t + 1 s */
  CHECK(state(b) == SEAWALL_STATE_OPEN);

  child = fork();
  if (child == 0) {
    seawall_breaker *cb = NULL;
    if (seawall_breaker_open_shared(name, &cfg, &cb) == SEAWALL_STATUS_OK &&
        seawall_breaker_try_acquire(cb, probe_at, &p, NULL) == SEAWALL_STATUS_OK) {
      kill(getpid(), SIGKILL); /* dies holding the probe */
    }
    _exit(3);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  /* The dead child's probe held the slot: this caller gives it back and probes. */
  CHECK_STATUS(seawall_breaker_try_acquire(b, probe_at, &p, &r), SEAWALL_STATUS_OK);
  m = metrics(b, probe_at);
  CHECK_U64(m.permits_outstanding, 2); /* ours, and the new probe */
  CHECK_U64(m.half_open_in_flight, 1);
  CHECK_U64(m.ignored, 1);             /* the child's probe */
  CHECK_STATUS(seawall_breaker_reclaim_abandoned(b, probe_at, &reclaimed), SEAWALL_STATUS_OK);
  CHECK_U64(reclaimed, 0); /* nothing left to reclaim; ours stays */
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, probe_at),
               SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_record(b, mine, SEAWALL_OUTCOME_SUCCESS, 0, probe_at),
               SEAWALL_STATUS_OK); /* stale now, still ours to record once */
  CHECK_STATUS(seawall_breaker_reclaim_abandoned(b, probe_at, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reclaim_abandoned(NULL, probe_at, &reclaimed),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_U64(metrics(b, probe_at).permits_outstanding, 0);
  seawall_breaker_free(b);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
}

/* ---------------------------------------------------------------------------
 * The other primitives: semaphore (DESIGN §5), retry budget, retry throttle,
 * backoff and the retry decision (§4), health (§7). Expected values worked out
 * by hand from DESIGN.md.
 * ------------------------------------------------------------------------- */

static void status_values_and_names(void) {
  /* Appended from 15 on; the older ones keep their values. */
  CHECK(SEAWALL_STATUS_PERMITS_EXHAUSTED == 14 && SEAWALL_STATUS_QUEUED == 15 &&
        SEAWALL_STATUS_WAITING == 16 && SEAWALL_STATUS_CANCELLED == 17 &&
        SEAWALL_STATUS_PASSED_ON == 18 && SEAWALL_STATUS_UNKNOWN_TICKET == 19 &&
        SEAWALL_STATUS_WAIT_TIMED_OUT == 20);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_QUEUED), "SEAWALL_STATUS_QUEUED") == 0);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_PASSED_ON), "SEAWALL_STATUS_PASSED_ON") == 0);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_UNKNOWN_TICKET),
               "SEAWALL_STATUS_UNKNOWN_TICKET") == 0);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_WAIT_TIMED_OUT),
               "SEAWALL_STATUS_WAIT_TIMED_OUT") == 0);
  CHECK(SEAWALL_STATUS_REGION_UNTRUSTED == 21);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_REGION_UNTRUSTED),
               "SEAWALL_STATUS_REGION_UNTRUSTED") == 0);
  CHECK(SEAWALL_STATUS_REGION_CORRUPT == 22);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_REGION_CORRUPT),
               "SEAWALL_STATUS_REGION_CORRUPT") == 0);
  CHECK(strcmp(seawall_status_name(23), "unknown") == 0);
  CHECK(strcmp(seawall_priority_name(SEAWALL_PRIORITY_CRITICAL), "critical") == 0);
  CHECK(strcmp(seawall_priority_name(SEAWALL_PRIORITY_LOW), "low") == 0);
  CHECK(strcmp(seawall_priority_name(4), "unknown") == 0);
  CHECK(strcmp(seawall_health_status_name(SEAWALL_HEALTH_DEGRADED), "degraded") == 0);
  CHECK(strcmp(seawall_health_status_name(3), "unknown") == 0);
  CHECK(strcmp(seawall_give_up_name(SEAWALL_GIVE_UP_BUDGET_EXHAUSTED), "budget_exhausted") == 0);
  CHECK(strcmp(seawall_give_up_name(SEAWALL_GIVE_UP_NONE), "none") == 0);
  CHECK(strcmp(seawall_give_up_name(7), "unknown") == 0);
  CHECK(SEAWALL_PRIORITY_CRITICAL == 0 && SEAWALL_PRIORITY_HIGH == 1 &&
        SEAWALL_PRIORITY_NORMAL == 2 && SEAWALL_PRIORITY_LOW == 3);
}

static void defaults_of_the_other_primitives(void) {
  seawall_semaphore_config s = seawall_semaphore_config_default();
  seawall_retry_budget_config b = seawall_retry_budget_config_default();
  seawall_retry_throttle_config t = seawall_retry_throttle_config_default();
  seawall_backoff_config k = seawall_backoff_config_default();
  seawall_retry_config r = seawall_retry_config_default();
  seawall_health_config h = seawall_health_config_default();
  seawall_backoff_state st = seawall_backoff_state_new(77);

  /* §5: a plain bulkhead of 10, no queue. */
  CHECK_U64(s.max_concurrent, 10);
  CHECK_U64(s.max_queue, 0);
  CHECK_U64(s.critical_share_ppm, 1000000);
  CHECK_U64(s.high_share_ppm, 1000000);
  CHECK_U64(s.normal_share_ppm, 1000000);
  CHECK_U64(s.low_share_ppm, 1000000);
  /* §4: budget ttl 10 s, 10/s, 20 %; throttle gRPC's 10 tokens, 0.1. */
  CHECK_U64(b.ttl_ns, 10 * SEC);
  CHECK_U64(b.min_retries_per_sec, 10);
  CHECK_U64(b.percent_can_retry_ppm, 200000);
  CHECK_U64(t.max_milli_tokens, 10000);
  CHECK_U64(t.token_ratio_milli, 100);
  /* §4: base 100 ms, ×2, cap 10 s, full jitter, 3 attempts. */
  CHECK_U64(k.base_ns, 100 * MS);
  CHECK_U64(k.multiplier_ppm, 2000000);
  CHECK_U64(k.max_ns, 10 * SEC);
  CHECK(k.jitter == SEAWALL_JITTER_FULL);
  CHECK_U64(k.jitter_factor_ppm, 200000);
  CHECK(memcmp(&r.backoff, &k, sizeof k) == 0);
  CHECK_U64(r.max_attempts, 3);
  /* §7: 10 × 1 s; degraded > 10 % or p99 > 2 s, unhealthy > 50 % or > 5 s. */
  CHECK_U64(h.buckets, 10);
  CHECK_U64(h.bucket_width_ns, 1 * SEC);
  CHECK_U64(h.degraded_error_rate_ppm, 100000);
  CHECK_U64(h.unhealthy_error_rate_ppm, 500000);
  CHECK_U64(h.degraded_p99_ns, 2 * SEC);
  CHECK_U64(h.unhealthy_p99_ns, 5 * SEC);
  CHECK_U64(st.attempt, 0);
  CHECK_U64(st.previous_ns, 0);
  CHECK_U64(st.rng_state, 77);
  CHECK(seawall_random_seed() != seawall_random_seed()); /* 2^-64 to fail */
}

static void null_arguments_of_the_other_primitives(void) {
  seawall_semaphore_config sc = seawall_semaphore_config_default();
  seawall_retry_budget_config bc = seawall_retry_budget_config_default();
  seawall_retry_throttle_config tc = seawall_retry_throttle_config_default();
  seawall_backoff_config kc = seawall_backoff_config_default();
  seawall_retry_config rc = seawall_retry_config_default();
  seawall_health_config hc = seawall_health_config_default();
  seawall_backoff_state st = seawall_backoff_state_new(1);
  seawall_failed_attempt fa = {1, 0, 0, 0, SEAWALL_NONE, SEAWALL_NONE};
  seawall_retry_decision dec;
  seawall_semaphore *s = NULL, *sout = (seawall_semaphore *)&sc;
  seawall_retry_budget *b = NULL, *bout = (seawall_retry_budget *)&bc;
  seawall_retry_throttle *t = NULL, *tout = (seawall_retry_throttle *)&tc;
  seawall_health *h = NULL, *hout = (seawall_health *)&hc;
  seawall_semaphore_permit p = {0};
  seawall_semaphore_ticket tk = {0};
  seawall_semaphore_snapshot ss;
  seawall_retry_budget_snapshot bs;
  seawall_health_snapshot hs;
  uint64_t u64v;
  uint32_t u32v;
  bool flag;
  char mem[64];

  CHECK_STATUS(seawall_semaphore_new(NULL, &sout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("config is NULL");
  CHECK(sout == NULL);
  CHECK_STATUS(seawall_semaphore_new(&sc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(seawall_semaphore_new(&sc, &s), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_open_shared(NULL, &sc, &sout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("name is NULL");
  CHECK_STATUS(seawall_semaphore_open_shared("x", NULL, &sout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_open_shared("x", &sc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_init_in(NULL, 4096, &sc, &sout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("mem is NULL");
  CHECK_STATUS(seawall_semaphore_init_in(mem, sizeof mem, NULL, &sout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_init_in(mem, sizeof mem, &sc, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_attach(NULL, 4096, &sout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("semaphore is NULL");
  CHECK_STATUS(seawall_semaphore_created(s, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_get_config(NULL, &sc), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_get_config(s, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_limit(NULL, SEAWALL_PRIORITY_LOW, &u32v),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_limit(s, SEAWALL_PRIORITY_LOW, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_try_acquire(NULL, SEAWALL_PRIORITY_NORMAL, &p, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_NORMAL, NULL, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_permit is NULL");
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(NULL, SEAWALL_PRIORITY_NORMAL, &p, &tk, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, NULL, &tk, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, &p, NULL, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_ticket is NULL");
  CHECK_STATUS(seawall_semaphore_poll(NULL, tk, &p), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_poll(s, tk, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_cancel(NULL, tk), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_release(NULL, p), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_acquire_timeout(NULL, SEAWALL_PRIORITY_NORMAL, 0, &p, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, 0, NULL, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_get_snapshot(NULL, &ss), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_reclaim_abandoned(NULL, &u64v, &u64v),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_reclaim_abandoned(s, NULL, NULL), SEAWALL_STATUS_OK);
  /* Nothing above acquired anything. */
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &ss), SEAWALL_STATUS_OK);
  CHECK_U64(ss.active, 0);
  CHECK_U64(ss.permits_outstanding, 0);

  CHECK_STATUS(seawall_retry_budget_new(NULL, &bout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK(bout == NULL);
  CHECK_STATUS(seawall_retry_budget_new(&bc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_new(&bc, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_open_shared(NULL, &bc, &bout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_open_shared("x", NULL, &bout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_open_shared("x", &bc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_init_in(NULL, 4096, &bc, &bout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_init_in(mem, sizeof mem, NULL, &bout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_init_in(mem, sizeof mem, &bc, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_attach(NULL, 4096, &bout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("budget is NULL");
  CHECK_STATUS(seawall_retry_budget_created(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_get_config(NULL, &bc), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_get_config(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_deposit(NULL, 0), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_try_withdraw(NULL, 0, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_try_withdraw(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_allowed is NULL");
  CHECK_STATUS(seawall_retry_budget_balance(NULL, 0, &bs), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_budget_balance(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  /* Nothing was withdrawn by the refused calls: the full reserve of 100. */
  CHECK_STATUS(seawall_retry_budget_balance(b, 0, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.available, 100);

  CHECK_STATUS(seawall_retry_throttle_new(NULL, &tout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK(tout == NULL);
  CHECK_STATUS(seawall_retry_throttle_new(&tc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_new(&tc, &t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_open_shared(NULL, &tc, &tout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_open_shared("x", NULL, &tout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_open_shared("x", &tc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_init_in(NULL, 4096, &tc, &tout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_init_in(mem, sizeof mem, NULL, &tout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_init_in(mem, sizeof mem, &tc, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_attach(NULL, 4096, &tout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("throttle is NULL");
  CHECK_STATUS(seawall_retry_throttle_created(t, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_get_config(NULL, &tc), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_get_config(t, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_record_success(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_record_failure(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_record_failure(t, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_retry_allowed is NULL");
  CHECK_STATUS(seawall_retry_throttle_tokens(NULL, &u64v, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &u64v, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(u64v, 10000); /* the refused failure took no token */

  CHECK_STATUS(seawall_health_new(NULL, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK(hout == NULL);
  CHECK_STATUS(seawall_health_new(&hc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_new(&hc, &h), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_open_shared(NULL, &hc, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_open_shared("x", NULL, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_open_shared("x", &hc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_init_in(NULL, 4096, &hc, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_init_in(mem, sizeof mem, NULL, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_init_in(mem, sizeof mem, &hc, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_attach(NULL, 4096, &hout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("health is NULL");
  CHECK_STATUS(seawall_health_created(h, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_get_config(NULL, &hc), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_get_config(h, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_record(NULL, SEAWALL_OUTCOME_SUCCESS, 1, 0),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_get_snapshot(NULL, 0, &hs), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_get_snapshot(h, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_quantile(NULL, 500000, 0, &u64v), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_health_quantile(h, 500000, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_ns is NULL");

  CHECK_STATUS(seawall_backoff_check_config(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_backoff_next_delay(NULL, &st, SEAWALL_NONE, &u64v),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_backoff_next_delay(&kc, NULL, SEAWALL_NONE, &u64v),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("state is NULL");
  CHECK_STATUS(seawall_backoff_next_delay(&kc, &st, SEAWALL_NONE, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_U64(st.attempt, 0); /* a refused call leaves the state alone */
  CHECK_STATUS(seawall_backoff_delay(NULL, 1, 0, 0, &u64v), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_backoff_delay(&kc, 1, 0, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_decide(NULL, &fa, NULL, NULL, 0, &dec), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_retry_decide(&rc, NULL, NULL, NULL, 0, &dec), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("failed is NULL");
  CHECK_STATUS(seawall_retry_decide(&rc, &fa, NULL, NULL, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  seawall_semaphore_free(NULL);
  seawall_retry_budget_free(NULL);
  seawall_retry_throttle_free(NULL);
  seawall_health_free(NULL);
  seawall_semaphore_free(s);
  seawall_retry_budget_free(b);
  seawall_retry_throttle_free(t);
  seawall_health_free(h);
}

static void invalid_semaphore(seawall_semaphore_config c, const char *message) {
  seawall_semaphore *s = (seawall_semaphore *)&c;
  CHECK_STATUS(seawall_semaphore_new(&c, &s), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(s == NULL);
}

static void invalid_budget(seawall_retry_budget_config c, const char *message) {
  seawall_retry_budget *b = (seawall_retry_budget *)&c;
  CHECK_STATUS(seawall_retry_budget_new(&c, &b), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(b == NULL);
}

static void invalid_throttle(seawall_retry_throttle_config c, const char *message) {
  seawall_retry_throttle *t = (seawall_retry_throttle *)&c;
  CHECK_STATUS(seawall_retry_throttle_new(&c, &t), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(t == NULL);
}

static void invalid_backoff(seawall_backoff_config c, const char *message) {
  seawall_backoff_state st = seawall_backoff_state_new(1);
  uint64_t d = 12345;
  CHECK_STATUS(seawall_backoff_check_config(&c), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK_STATUS(seawall_backoff_next_delay(&c, &st, SEAWALL_NONE, &d),
               SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK_U64(st.attempt, 0);
  CHECK_U64(d, 12345);
}

static void invalid_health(seawall_health_config c, const char *message) {
  seawall_health *h = (seawall_health *)&c;
  CHECK_STATUS(seawall_health_new(&c, &h), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(h == NULL);
}

static void invalid_configs_of_the_other_primitives(void) {
  seawall_semaphore_config s;
  seawall_retry_budget_config b;
  seawall_retry_throttle_config t;
  seawall_backoff_config k;
  seawall_retry_config r;
  seawall_health_config h;
  seawall_failed_attempt fa = {1, 0, 0, 0, SEAWALL_NONE, SEAWALL_NONE};
  seawall_retry_decision dec;

  s = seawall_semaphore_config_default();
  s.max_concurrent = 0;
  invalid_semaphore(s, "invalid semaphore.max_concurrent: must not be zero");
  s.max_concurrent = SEAWALL_SEMAPHORE_MAX_CONCURRENT + 1;
  invalid_semaphore(s, "invalid semaphore.max_concurrent: must be between 1 and 4096");
  s = seawall_semaphore_config_default();
  s.max_queue = SEAWALL_SEMAPHORE_MAX_QUEUE + 1;
  invalid_semaphore(s, "invalid semaphore.max_queue: must be between 0 and 1024");
  s = seawall_semaphore_config_default();
  s.low_share_ppm = 1000001;
  invalid_semaphore(s, "invalid semaphore.priority_shares: must be between 0 and 1000000");

  b = seawall_retry_budget_config_default();
  b.ttl_ns = 0;
  invalid_budget(b, "invalid retry_budget.ttl: must not be zero");
  b.ttl_ns = MS - 1;
  invalid_budget(b, "invalid retry_budget.ttl: must be between 1000000 and 18446744073709551615");
  b = seawall_retry_budget_config_default();
  b.percent_can_retry_ppm = 10000001;
  invalid_budget(b, "invalid retry_budget.percent_can_retry: must be between 0 and 10000000");

  t = seawall_retry_throttle_config_default();
  t.max_milli_tokens = 0;
  invalid_throttle(t, "invalid retry_throttle.max_tokens: must not be zero");
  t.max_milli_tokens = 1000001;
  invalid_throttle(t, "invalid retry_throttle.max_tokens: must be between 1 and 1000000");
  t = seawall_retry_throttle_config_default();
  t.token_ratio_milli = 0;
  invalid_throttle(t, "invalid retry_throttle.token_ratio: must not be zero");

  k = seawall_backoff_config_default();
  k.multiplier_ppm = 999999;
  invalid_backoff(k, "invalid backoff.multiplier: must be between 1000000 and 18446744073709551615");
  k = seawall_backoff_config_default();
  k.max_ns = k.base_ns - 1;
  invalid_backoff(k, "invalid backoff.max: must not be less than backoff.base");
  k = seawall_backoff_config_default();
  k.jitter = 9;
  invalid_backoff(k, "invalid backoff.jitter: 9 is not a SEAWALL_JITTER_* value (0 to 4)");
  k = seawall_backoff_config_default();
  k.jitter = SEAWALL_JITTER_PROPORTIONAL;
  k.jitter_factor_ppm = 1000001;
  invalid_backoff(k, "invalid backoff.jitter_factor: must be between 0 and 1000000");
  /* 1 ms × 1.0001 per step: about 92 000 steps to reach 10 s. */
  k = seawall_backoff_config_default();
  k.base_ns = MS;
  k.multiplier_ppm = 1000100;
  invalid_backoff(k, "invalid backoff.multiplier: the delay must reach the cap or stop growing "
                     "within 4096 attempts");

  r = seawall_retry_config_default();
  r.max_attempts = 0;
  CHECK_STATUS(seawall_retry_decide(&r, &fa, NULL, NULL, 0, &dec), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid max_attempts: must not be zero");
  r = seawall_retry_config_default();
  r.backoff.multiplier_ppm = 999999;
  CHECK_STATUS(seawall_retry_decide(&r, &fa, NULL, NULL, 0, &dec), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid backoff.multiplier: must be between 1000000 and 18446744073709551615");

  h = seawall_health_config_default();
  h.buckets = 0;
  invalid_health(h, "invalid health.buckets: must not be zero");
  h.buckets = SEAWALL_HEALTH_MAX_BUCKETS + 1;
  invalid_health(h, "invalid health.buckets: must be between 1 and 60");
  h = seawall_health_config_default();
  h.bucket_width_ns = 0;
  invalid_health(h, "invalid health.bucket_width: must not be zero");
  h.bucket_width_ns = MS - 1; /* upper bound: UINT64_MAX / 10 buckets */
  invalid_health(h, "invalid health.bucket_width: must be between 1000000 and 1844674407370955161");
  h = seawall_health_config_default();
  h.degraded_error_rate_ppm = 1000001;
  invalid_health(h, "invalid health.degraded_error_rate: must be between 0 and 1000000");
  h = seawall_health_config_default();
  h.unhealthy_error_rate_ppm = h.degraded_error_rate_ppm - 1;
  invalid_health(h, "invalid health.unhealthy_error_rate: must not be less than "
                    "health.degraded_error_rate");
  h = seawall_health_config_default();
  h.unhealthy_p99_ns = h.degraded_p99_ns - 1;
  invalid_health(h, "invalid health.unhealthy_p99: must not be less than health.degraded_p99");
}

static seawall_semaphore_snapshot sem_snapshot(const seawall_semaphore *s) {
  seawall_semaphore_snapshot snap;
  memset(&snap, 0xAB, sizeof snap);
  CHECK_STATUS(seawall_semaphore_get_snapshot(s, &snap), SEAWALL_STATUS_OK);
  return snap;
}

#define CHECK_OCCUPANCY(s, a, q, permits, tickets)         \
  do {                                                     \
    seawall_semaphore_snapshot o_ = sem_snapshot(s);       \
    CHECK_U64(o_.active, a);                               \
    CHECK_U64(o_.queued, q);                               \
    CHECK_U64(o_.permits_outstanding, permits);            \
    CHECK_U64(o_.tickets_outstanding, tickets);            \
  } while (0)

/* DESIGN §5 by hand: 4 permits, a queue of 2, shares critical 100 %, high 75 %
 * (limit 3), normal 50 % (limit 2), low 10 % (floor 0.4 = 0, floor of 1). */
static void semaphore_protocol(void) {
  seawall_semaphore_config cfg = seawall_semaphore_config_default();
  seawall_semaphore *s = NULL, *other = NULL;
  seawall_semaphore_permit low, normal, high, crit, p1, p, forged;
  seawall_semaphore_ticket t1, t2, t3, t4, tk, bad;
  seawall_semaphore_rejection r;
  uint32_t limit;

  cfg.max_concurrent = 4;
  cfg.max_queue = 2;
  cfg.high_share_ppm = 750000;
  cfg.normal_share_ppm = 500000;
  cfg.low_share_ppm = 100000;
  CHECK_STATUS(seawall_semaphore_new(&cfg, &s), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_limit(s, SEAWALL_PRIORITY_CRITICAL, &limit), SEAWALL_STATUS_OK);
  CHECK_U64(limit, 4);
  CHECK_STATUS(seawall_semaphore_limit(s, SEAWALL_PRIORITY_HIGH, &limit), SEAWALL_STATUS_OK);
  CHECK_U64(limit, 3);
  CHECK_STATUS(seawall_semaphore_limit(s, SEAWALL_PRIORITY_NORMAL, &limit), SEAWALL_STATUS_OK);
  CHECK_U64(limit, 2);
  CHECK_STATUS(seawall_semaphore_limit(s, SEAWALL_PRIORITY_LOW, &limit), SEAWALL_STATUS_OK);
  CHECK_U64(limit, 1);
  CHECK_STATUS(seawall_semaphore_limit(s, 4, &limit), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid priority 4: use SEAWALL_PRIORITY_CRITICAL (0), _HIGH (1), _NORMAL (2) "
                "or _LOW (3)");
  CHECK_STATUS(seawall_semaphore_try_acquire(s, 9, &p, NULL), SEAWALL_STATUS_INVALID_ARGUMENT);

  /* Shedding is immediate and never queues. */
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_LOW, &low, NULL),
               SEAWALL_STATUS_OK);
  memset(&r, 0, sizeof r);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_LOW, &p, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_SHED);
  CHECK_U64(r.active, 1);
  CHECK_U64(r.queued, 0);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_NORMAL, &normal, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, &p, &tk, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_SHED);
  CHECK_U64(r.active, 2);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_HIGH, &high, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &crit, NULL),
               SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(s, 4, 0, 4, 0);
  /* Full: the critical share is the whole, so it is not shed; a try never waits. */
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &p, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_FULL);
  CHECK_U64(r.active, 4);
  /* The queue: FIFO tickets, up to max_queue. */
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &p, &t1, NULL),
               SEAWALL_STATUS_QUEUED);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_HIGH, &p, &tk, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_SHED); /* high: 4 active ≥ its limit 3 < 4 */
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &p, &t2, NULL),
               SEAWALL_STATUS_QUEUED);
  CHECK(t1.id != t2.id);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &p, &tk, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_FULL);
  CHECK_U64(r.active, 4);
  CHECK_U64(r.queued, 2);
  CHECK_OCCUPANCY(s, 4, 2, 4, 2);
  CHECK_STATUS(seawall_semaphore_poll(s, t1, &p), SEAWALL_STATUS_WAITING);

  /* Unknown tickets change nothing. */
  bad.id = (t1.id & ~0xFFFFFFFFull) | 0xFFFFu; /* a slot the table does not have */
  CHECK_STATUS(seawall_semaphore_cancel(s, bad), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("not a ticket of this semaphore: nothing changed");
  bad.id = t1.id ^ (1ull << 32); /* its slot, another generation */
  CHECK_STATUS(seawall_semaphore_cancel(s, bad), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_MESSAGE_HAS("ticket is not waiting");
  CHECK_STATUS(seawall_semaphore_poll(s, bad, &p), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_OCCUPANCY(s, 4, 2, 4, 2);

  /* A release hands the permit to the oldest waiter, whatever its priority. */
  CHECK_STATUS(seawall_semaphore_release(s, low), SEAWALL_STATUS_OK);
  /* t1 holds it now; until it polls it still counts as queued. */
  CHECK_OCCUPANCY(s, 4, 2, 3, 2);
  CHECK_STATUS(seawall_semaphore_release(s, low), SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_MESSAGE_HAS("already released");
  CHECK_OCCUPANCY(s, 4, 2, 3, 2);
  CHECK_STATUS(seawall_semaphore_poll(s, t2, &p), SEAWALL_STATUS_WAITING);
  memset(&p1, 0, sizeof p1);
  CHECK_STATUS(seawall_semaphore_poll(s, t1, &p1), SEAWALL_STATUS_OK);
  CHECK(p1.id == t1.id); /* the ticket became this permit */
  CHECK_OCCUPANCY(s, 4, 1, 4, 1);
  CHECK_STATUS(seawall_semaphore_poll(s, t1, &p), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_STATUS(seawall_semaphore_cancel(s, t1), SEAWALL_STATUS_UNKNOWN_TICKET);

  /* A waiter that gives up leaves at once; twice is refused. */
  CHECK_STATUS(seawall_semaphore_cancel(s, t2), SEAWALL_STATUS_CANCELLED);
  CHECK_OCCUPANCY(s, 4, 0, 4, 0);
  CHECK_STATUS(seawall_semaphore_cancel(s, t2), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_STATUS(seawall_semaphore_poll(s, t2, &p), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_STATUS(seawall_semaphore_release(s, p1), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(s, 3, 0, 3, 0);

  /* A permit handed to a ticket in the same instant it is cancelled goes on. */
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &p1, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &p, &t3, NULL),
               SEAWALL_STATUS_QUEUED);
  CHECK_STATUS(seawall_semaphore_release(s, normal), SEAWALL_STATUS_OK); /* granted to t3 */
  CHECK_OCCUPANCY(s, 4, 1, 3, 1); /* queued until t3 polls or cancels */
  CHECK_STATUS(seawall_semaphore_cancel(s, t3), SEAWALL_STATUS_PASSED_ON);
  CHECK_OCCUPANCY(s, 3, 0, 3, 0); /* back to the pool: no other waiter */

  /* A ticket still waiting is no permit; a forged permit changes nothing. */
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_CRITICAL, &p, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_CRITICAL, &forged, &t4,
                                                    NULL),
               SEAWALL_STATUS_QUEUED);
  forged.id = t4.id;
  CHECK_STATUS(seawall_semaphore_release(s, forged), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("that id is a ticket still waiting, not a permit: poll it or cancel it");
  forged.id = 0xFFFFu;
  CHECK_STATUS(seawall_semaphore_release(s, forged), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("not a permit of this semaphore: nothing changed");
  CHECK_OCCUPANCY(s, 4, 1, 4, 1);
  CHECK_STATUS(seawall_semaphore_cancel(s, t4), SEAWALL_STATUS_CANCELLED);

  /* A permit of another semaphore is refused there and changes nothing. */
  CHECK_STATUS(seawall_semaphore_new(&cfg, &other), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_try_acquire(other, SEAWALL_PRIORITY_CRITICAL, &forged, NULL),
               SEAWALL_STATUS_OK);
  {
    seawall_status st = seawall_semaphore_release(s, forged);
    CHECK(st == SEAWALL_STATUS_PERMIT_ALREADY_USED || st == SEAWALL_STATUS_INVALID_ARGUMENT);
  }
  CHECK_OCCUPANCY(s, 4, 0, 4, 0);
  CHECK_STATUS(seawall_semaphore_release(other, forged), SEAWALL_STATUS_OK);
  seawall_semaphore_free(other);

  CHECK_STATUS(seawall_semaphore_release(s, high), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, crit), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, p1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, p), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(s, 0, 0, 0, 0);
  seawall_semaphore_free(s);
}

struct delayed_release {
  const seawall_semaphore *s;
  seawall_semaphore_permit permit;
  unsigned delay_ms;
  seawall_status status;
};

static void *release_later(void *arg) {
  struct delayed_release *d = (struct delayed_release *)arg;
  struct timespec ts;
  ts.tv_sec = d->delay_ms / 1000;
  ts.tv_nsec = (long)(d->delay_ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
  d->status = seawall_semaphore_release(d->s, d->permit);
  return NULL;
}

static void semaphore_blocking_wait(void) {
  seawall_semaphore_config cfg = seawall_semaphore_config_default();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit held, p;
  seawall_semaphore_rejection r;
  struct delayed_release d;
  pthread_t th;
  uint64_t t0, waited;

  cfg.max_concurrent = 1;
  cfg.max_queue = 1;
  CHECK_STATUS(seawall_semaphore_new(&cfg, &s), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, 0, &held, NULL),
               SEAWALL_STATUS_OK);
  /* Timeout 0 never queues. */
  CHECK_STATUS(seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, 0, &p, &r),
               SEAWALL_STATUS_REJECTED);
  CHECK(r.reason == SEAWALL_REJECT_FULL);
  /* Nobody releases: the whole timeout, then the waiter is gone. */
  t0 = seawall_now_ns();
  CHECK_STATUS(seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, 20 * MS, &p, &r),
               SEAWALL_STATUS_WAIT_TIMED_OUT);
  waited = seawall_now_ns() - t0;
  CHECK(waited >= 20 * MS);
  CHECK(waited < 2 * SEC);
  CHECK_OCCUPANCY(s, 1, 0, 1, 0);
  /* Another thread releases after 30 ms: the waiter gets that very permit. */
  d.s = s;
  d.permit = held;
  d.delay_ms = 30;
  d.status = SEAWALL_STATUS_PANIC;
  t0 = seawall_now_ns();
  CHECK(pthread_create(&th, NULL, release_later, &d) == 0);
  CHECK_STATUS(
      seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, SEAWALL_NONE, &p, NULL),
      SEAWALL_STATUS_OK);
  waited = seawall_now_ns() - t0;
  CHECK(pthread_join(th, NULL) == 0);
  CHECK_STATUS(d.status, SEAWALL_STATUS_OK);
  CHECK(waited >= 30 * MS); /* the releaser slept 30 ms, started after t0 */
  CHECK_OCCUPANCY(s, 1, 0, 1, 0);
  CHECK_STATUS(seawall_semaphore_release(s, p), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(s, 0, 0, 0, 0);
  seawall_semaphore_free(s);
}

/* Finagle RetryBudget, DESIGN §4 oracle: ttl 1 s, min 0, 60 %: 10 requests then
 * 10 retry attempts → exactly 6; everything expires after the ttl (10 buckets
 * of 100 ms). A reserve of min · ttl. */
static void retry_budget_by_hand(void) {
  seawall_retry_budget_config cfg = seawall_retry_budget_config_default();
  seawall_retry_budget *b = NULL;
  seawall_retry_budget_snapshot bs;
  seawall_retry_budget_config got;
  bool allowed, created;
  int i, n;

  cfg.ttl_ns = 1 * SEC;
  cfg.min_retries_per_sec = 0;
  cfg.percent_can_retry_ppm = 600000;
  CHECK_STATUS(seawall_retry_budget_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_retry_budget_get_config(b, &got), SEAWALL_STATUS_OK);
  CHECK(memcmp(&got, &cfg, sizeof cfg) == 0);
  CHECK_STATUS(seawall_retry_budget_try_withdraw(b, 0, &allowed), SEAWALL_STATUS_OK);
  CHECK(!allowed); /* no reserve, no deposit */
  for (i = 0; i < 10; i++) CHECK_STATUS(seawall_retry_budget_deposit(b, 0), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_balance(b, 0, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.requests, 10);
  CHECK_U64(bs.retries, 0);
  CHECK_U64(bs.balance_ppm, 6000000);
  CHECK_U64(bs.available, 6);
  for (i = 0, n = 0; i < 10; i++) {
    CHECK_STATUS(seawall_retry_budget_try_withdraw(b, 0, &allowed), SEAWALL_STATUS_OK);
    n += allowed;
  }
  CHECK_U64(n, 6);
  CHECK_STATUS(seawall_retry_budget_balance(b, 500 * MS, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.retries, 6);
  CHECK_U64(bs.balance_ppm, 0);
  /* The bucket of t = 0 leaves the window at t = 1 s. */
  CHECK_STATUS(seawall_retry_budget_balance(b, 1 * SEC, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.requests, 0);
  CHECK_U64(bs.retries, 0);
  seawall_retry_budget_free(b);

  /* A reserve of 10/s over 2 s: 20 retries with no request at all. */
  cfg.ttl_ns = 2 * SEC;
  cfg.min_retries_per_sec = 10;
  CHECK_STATUS(seawall_retry_budget_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_balance(b, 0, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.balance_ppm, 20000000);
  for (i = 0, n = 0; i < 25; i++) {
    CHECK_STATUS(seawall_retry_budget_try_withdraw(b, 5 * MS, &allowed), SEAWALL_STATUS_OK);
    n += allowed;
  }
  CHECK_U64(n, 20);
  seawall_retry_budget_free(b);
}

/* gRPC A6 oracle (10 tokens, ratio 0.1): failures 1-4 retried, the 5th not. */
static void retry_throttle_by_hand(void) {
  seawall_retry_throttle_config cfg = seawall_retry_throttle_config_default();
  seawall_retry_throttle *t = NULL;
  uint64_t tokens;
  bool retry, would;
  int i;

  CHECK_STATUS(seawall_retry_throttle_new(&cfg, &t), SEAWALL_STATUS_OK);
  for (i = 1; i <= 4; i++) {
    CHECK_STATUS(seawall_retry_throttle_record_failure(t, &retry), SEAWALL_STATUS_OK);
    CHECK(retry);
  }
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, &would), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 6000);
  CHECK(would);
  CHECK_STATUS(seawall_retry_throttle_record_failure(t, &retry), SEAWALL_STATUS_OK);
  CHECK(!retry); /* 5000 is not more than 10000 / 2 */
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, &would), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 5000);
  CHECK(!would);
  CHECK_STATUS(seawall_retry_throttle_record_success(t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, &would), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 5100);
  CHECK(would);
  for (i = 0; i < 100; i++) CHECK_STATUS(seawall_retry_throttle_record_success(t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 10000); /* clamped at max */
  for (i = 0; i < 12; i++) CHECK_STATUS(seawall_retry_throttle_record_failure(t, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 0); /* clamped at 0 */
  seawall_retry_throttle_free(t);
}

static void backoff_by_hand(void) {
  seawall_backoff_config cfg = seawall_backoff_config_default();
  seawall_backoff_state a, b;
  uint64_t d, e, expected[6] = {100 * MS, 200 * MS, 400 * MS, 800 * MS, 1 * SEC, 1 * SEC};
  unsigned n;
  int differ = 0;

  /* No jitter: exp(n) = min(1 s, 100 ms · 2^(n−1)). */
  cfg.jitter = SEAWALL_JITTER_NONE;
  cfg.max_ns = 1 * SEC;
  CHECK_STATUS(seawall_backoff_check_config(&cfg), SEAWALL_STATUS_OK);
  a = seawall_backoff_state_new(5);
  for (n = 0; n < 6; n++) {
    CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, SEAWALL_NONE, &d), SEAWALL_STATUS_OK);
    CHECK_U64(d, expected[n]);
    CHECK_U64(a.attempt, n + 1);
    CHECK_U64(a.previous_ns, expected[n]);
    CHECK_STATUS(seawall_backoff_delay(&cfg, n + 1, 0, 0, &e), SEAWALL_STATUS_OK);
    CHECK_U64(e, expected[n]);
  }
  /* A server's retry-after raises the delay, even past the cap. */
  CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, 3 * SEC, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d, 3 * SEC);
  CHECK_U64(a.previous_ns, 1 * SEC);
  CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, 1, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d, 1 * SEC);

  /* Full jitter: U[0, exp(n)]; the same seed gives the same delays. */
  cfg.jitter = SEAWALL_JITTER_FULL;
  a = seawall_backoff_state_new(42);
  b = seawall_backoff_state_new(42);
  for (n = 0; n < 6; n++) {
    CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, SEAWALL_NONE, &d), SEAWALL_STATUS_OK);
    CHECK_STATUS(seawall_backoff_next_delay(&cfg, &b, SEAWALL_NONE, &e), SEAWALL_STATUS_OK);
    CHECK_U64(d, e);
    CHECK(d <= expected[n]);
    differ += d != expected[n];
  }
  CHECK(differ > 0);
  CHECK(memcmp(&a, &b, sizeof a) == 0);

  /* Decorrelated: d1 = base, dn within [base, min(cap, 3 · d(n−1))]. */
  cfg.jitter = SEAWALL_JITTER_DECORRELATED;
  a = seawall_backoff_state_new(7);
  CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, SEAWALL_NONE, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d, 100 * MS);
  for (n = 0; n < 20; n++) {
    uint64_t prev = a.previous_ns, hi = 3 * prev < 1 * SEC ? 3 * prev : 1 * SEC;
    CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, SEAWALL_NONE, &d), SEAWALL_STATUS_OK);
    CHECK(d >= 100 * MS && d <= hi);
  }

  /* Proportional 20 %: exp(2) = 200 ms → within [160, 240] ms. */
  cfg.jitter = SEAWALL_JITTER_PROPORTIONAL;
  for (n = 0; n < 50; n++) {
    CHECK_STATUS(seawall_backoff_delay(&cfg, 2, 0, seawall_random_seed(), &d), SEAWALL_STATUS_OK);
    CHECK(d >= 160 * MS && d <= 240 * MS);
  }
  /* Attempts up to UINT32_MAX: saturating, never above the cap. */
  CHECK_STATUS(seawall_backoff_delay(&cfg, UINT32_MAX, 0, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d <= 1 * SEC);

  /* Base 0 (DESIGN §4): every delay 0, whatever the jitter; a retry-after still raises it. */
  cfg = seawall_backoff_config_default();
  cfg.base_ns = 0;
  for (n = SEAWALL_JITTER_NONE; n <= SEAWALL_JITTER_PROPORTIONAL; n++) {
    unsigned k;
    cfg.jitter = (seawall_jitter)n;
    CHECK_STATUS(seawall_backoff_check_config(&cfg), SEAWALL_STATUS_OK);
    a = seawall_backoff_state_new(11);
    for (k = 0; k < 5; k++) {
      d = 12345;
      CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, SEAWALL_NONE, &d), SEAWALL_STATUS_OK);
      CHECK_U64(d, 0);
    }
    CHECK_STATUS(seawall_backoff_next_delay(&cfg, &a, 2 * MS, &d), SEAWALL_STATUS_OK);
    CHECK_U64(d, 2 * MS);
    CHECK_STATUS(seawall_backoff_delay(&cfg, 3, 1 * SEC, UINT64_MAX, &d), SEAWALL_STATUS_OK);
    CHECK_U64(d, 0);
  }
}

static void retry_decision_by_hand(void) {
  seawall_retry_config cfg = seawall_retry_config_default();
  seawall_failed_attempt f = {1, 0, 0, 0, SEAWALL_NONE, SEAWALL_NONE};
  seawall_retry_decision d;
  seawall_retry_budget_config bc = seawall_retry_budget_config_default();
  seawall_retry_throttle_config tc = seawall_retry_throttle_config_default();
  seawall_retry_budget *b = NULL;
  seawall_retry_throttle *t = NULL;
  uint64_t tokens;

  cfg.backoff.jitter = SEAWALL_JITTER_NONE; /* 100 ms, 200 ms; 3 attempts */
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.retry);
  CHECK_U64(d.delay_ns, 100 * MS);
  CHECK(d.give_up == SEAWALL_GIVE_UP_NONE);
  f.attempt = 2;
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.retry);
  CHECK_U64(d.delay_ns, 200 * MS);
  f.attempt = 3;
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(!d.retry);
  CHECK(d.give_up == SEAWALL_GIVE_UP_MAX_ATTEMPTS);
  /* A sleep ending at or after the deadline is not made. */
  f.attempt = 1;
  f.deadline_remaining_ns = 100 * MS;
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.give_up == SEAWALL_GIVE_UP_DEADLINE);
  f.deadline_remaining_ns = 100 * MS + 1;
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.retry);
  /* The server's retry-after wins over the backoff. */
  f.deadline_remaining_ns = SEAWALL_NONE;
  f.retry_after_ns = 2 * SEC;
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d.delay_ns, 2 * SEC);
  f.retry_after_ns = SEAWALL_NONE;
  /* A spent budget (no reserve, no deposit) refuses. */
  bc.min_retries_per_sec = 0;
  CHECK_STATUS(seawall_retry_budget_new(&bc, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, b, NULL, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.give_up == SEAWALL_GIVE_UP_BUDGET_EXHAUSTED);
  CHECK_U64(d.delay_ns, 0);
  /* A throttle of 2 tokens: the failure leaves 1, not more than 2 / 2. */
  tc.max_milli_tokens = 2000;
  CHECK_STATUS(seawall_retry_throttle_new(&tc, &t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, NULL, t, 0, &d), SEAWALL_STATUS_OK);
  CHECK(d.give_up == SEAWALL_GIVE_UP_THROTTLED);
  CHECK_STATUS(seawall_retry_throttle_tokens(t, &tokens, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 1000);
  CHECK_STATUS(seawall_retry_decide(&cfg, &f, b, t, 0, &d), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("give a retry budget or a retry throttle, not both");
  seawall_retry_budget_free(b);
  seawall_retry_throttle_free(t);
}

/* |got − want| ≤ want / 32: the histogram's documented bound (DESIGN §7). */
#define CHECK_APPROX(got, want) CHECK(((got) > (want) ? (got) - (want) : (want) - (got)) * 32 <= (want))

static void health_by_hand(void) {
  seawall_health_config cfg = seawall_health_config_default();
  seawall_health *h = NULL;
  seawall_health_snapshot s;
  uint64_t q;
  const uint64_t t = 5 * SEC;
  int i;

  CHECK_STATUS(seawall_health_new(&cfg, &h), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_get_snapshot(h, t, &s), SEAWALL_STATUS_OK);
  CHECK_U64(s.calls, 0);
  CHECK_U64(s.error_rate_ppm, SEAWALL_NONE);
  CHECK_U64(s.p50_ns, SEAWALL_NONE);
  CHECK_U64(s.p99_ns, SEAWALL_NONE);
  CHECK(s.status == SEAWALL_HEALTH_HEALTHY);
  /* 90 calls of 1 ms, 9 of 10 ms, 1 of 100 ms. */
  for (i = 0; i < 90; i++) CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_SUCCESS, 1 * MS, t), SEAWALL_STATUS_OK);
  for (i = 0; i < 9; i++) CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_SUCCESS, 10 * MS, t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_SUCCESS, 100 * MS, t), SEAWALL_STATUS_OK);
  /* Ignored counts nowhere; an unknown outcome is refused. */
  CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_IGNORED, 9 * SEC, t), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_record(h, 3, 9 * SEC, t), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid outcome 3: use SEAWALL_OUTCOME_SUCCESS (0), _FAILURE (1) or _IGNORED (2)");
  CHECK_STATUS(seawall_health_get_snapshot(h, t, &s), SEAWALL_STATUS_OK);
  CHECK_U64(s.calls, 100);
  CHECK_U64(s.errors, 0);
  CHECK_U64(s.latencies, 100);
  CHECK_U64(s.error_rate_ppm, 0);
  CHECK_APPROX(s.p50_ns, 1 * MS); /* rank 50 */
  CHECK_APPROX(s.p90_ns, 1 * MS); /* rank 90 */
  CHECK_APPROX(s.p99_ns, 10 * MS); /* rank 99 */
  CHECK(s.status == SEAWALL_HEALTH_HEALTHY);
  CHECK_STATUS(seawall_health_quantile(h, 1000000, t, &q), SEAWALL_STATUS_OK);
  CHECK_APPROX(q, 100 * MS);
  CHECK_STATUS(seawall_health_quantile(h, 910000, t, &q), SEAWALL_STATUS_OK);
  CHECK_APPROX(q, 10 * MS); /* rank 91 */
  /* 20 failures of 1 ms: 20 / 120 = 16.6 % > 10 %: degraded. */
  for (i = 0; i < 20; i++) CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_FAILURE, 1 * MS, t + 1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_get_snapshot(h, t + 1, &s), SEAWALL_STATUS_OK);
  CHECK_U64(s.calls, 120);
  CHECK_U64(s.errors, 20);
  CHECK_U64(s.error_rate_ppm, 166666);
  CHECK(s.status == SEAWALL_HEALTH_DEGRADED);
  /* 6 s of slow calls later the first bucket is still in the 10 s window; a
   * p99 of 6 s (above 5 s) is unhealthy whatever the error rate. */
  for (i = 0; i < 200; i++) CHECK_STATUS(seawall_health_record(h, SEAWALL_OUTCOME_SUCCESS, 6 * SEC, t + 6 * SEC), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_get_snapshot(h, t + 6 * SEC, &s), SEAWALL_STATUS_OK);
  CHECK_U64(s.calls, 320);
  CHECK_APPROX(s.p99_ns, 6 * SEC);
  CHECK(s.status == SEAWALL_HEALTH_UNHEALTHY);
  /* 10 s after the last record the window is empty again. */
  CHECK_STATUS(seawall_health_get_snapshot(h, t + 16 * SEC, &s), SEAWALL_STATUS_OK);
  CHECK_U64(s.calls, 0);
  CHECK_U64(s.p50_ns, SEAWALL_NONE);
  CHECK(s.status == SEAWALL_HEALTH_HEALTHY);
  CHECK_STATUS(seawall_health_quantile(h, 500000, t + 16 * SEC, &q), SEAWALL_STATUS_OK);
  CHECK_U64(q, SEAWALL_NONE);
  seawall_health_free(h);
}

/* Memory of `size` bytes at an `align`-aligned address; the caller frees it. */
static unsigned char *aligned_zeroed(size_t size, size_t align) {
  void *mem = NULL;
  CHECK(posix_memalign(&mem, align, size + align) == 0);
  if (mem != NULL) memset(mem, 0, size + align);
  return (unsigned char *)mem;
}

/* A semaphore in /dev/shm and in caller memory: one structure seen through
 * every handle; a permit or ticket taken through one handle is used through
 * another; every check of attach. */
static void shared_semaphore(void) {
  seawall_semaphore_config cfg = seawall_semaphore_config_default(), other;
  seawall_semaphore *a = NULL, *b = NULL, *c = NULL;
  seawall_breaker_config bcfg = count_config(4, 4);
  seawall_breaker *br = NULL;
  seawall_semaphore_permit p, q;
  seawall_semaphore_ticket t;
  seawall_semaphore_config got;
  size_t size = seawall_semaphore_size(), align = seawall_semaphore_align();
  unsigned char *mem;
  char name[64], path[128];
  bool created;

  cfg.max_concurrent = 1;
  cfg.max_queue = 1;
  sprintf(name, "c-api-sem-%ld", (long)getpid());
  seawall_semaphore_unlink_shared(name);
  CHECK_STATUS(seawall_semaphore_open_shared(name, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_created(a, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_semaphore_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  sprintf(path, "/dev/shm/seawall-semaphore-%s", name);
  CHECK(access(path, F_OK) == 0);
  CHECK_STATUS(seawall_semaphore_try_acquire(a, SEAWALL_PRIORITY_NORMAL, &p, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(b, SEAWALL_PRIORITY_NORMAL, &q, &t, NULL),
               SEAWALL_STATUS_QUEUED);
  CHECK_OCCUPANCY(a, 1, 1, 1, 1);
  CHECK_STATUS(seawall_semaphore_release(b, p), SEAWALL_STATUS_OK); /* handed to t */
  CHECK_STATUS(seawall_semaphore_release(a, p), SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_STATUS(seawall_semaphore_poll(a, t, &q), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_poll(b, t, &q), SEAWALL_STATUS_UNKNOWN_TICKET);
  CHECK_STATUS(seawall_semaphore_release(a, q), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(b, 0, 0, 0, 0);

  other = cfg;
  other.max_queue = 2;
  c = (seawall_semaphore *)&cfg;
  CHECK_STATUS(seawall_semaphore_open_shared(name, &other, &c), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("region was created with another configuration: semaphore.max_queue differs");
  CHECK(c == NULL);
  other = cfg;
  other.max_concurrent = 0;
  CHECK_STATUS(seawall_semaphore_open_shared(name, &other, &c), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid semaphore.max_concurrent: must not be zero");
  CHECK_STATUS(seawall_semaphore_open_shared("a/b", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK(access(path, F_OK) != 0);
  CHECK_STATUS(seawall_semaphore_try_acquire(b, SEAWALL_PRIORITY_NORMAL, &p, NULL),
               SEAWALL_STATUS_OK); /* attached handles go on */
  CHECK_STATUS(seawall_semaphore_release(a, p), SEAWALL_STATUS_OK);
  seawall_semaphore_free(a);
  seawall_semaphore_free(b);
  a = b = NULL;

  /* Caller memory: size, alignment, nothing there, another structure, ABI. */
  CHECK(align == 128);
  mem = aligned_zeroed(size, align);
  if (mem == NULL) return;
  CHECK_STATUS(seawall_semaphore_init_in(mem + 8, size, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("is not aligned to 128 bytes");
  CHECK_STATUS(seawall_semaphore_init_in(mem, size - 1, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("needs at least");
  CHECK_STATUS(seawall_semaphore_attach(mem, size, &a), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_STATUS(seawall_semaphore_attach(mem + 8, size, &a), SEAWALL_STATUS_BAD_REGION);
  /* A breaker's region is no semaphore. */
  CHECK(seawall_breaker_size() <= size);
  CHECK_STATUS(seawall_breaker_init_in(mem, size, &bcfg, &br), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_attach(mem, size, &a), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("not a semaphore");
  seawall_breaker_free(br);
  CHECK_STATUS(seawall_semaphore_init_in(mem, size, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_attach(mem, size, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_attach(mem, size - 1, &c), SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_semaphore_get_config(b, &got), SEAWALL_STATUS_OK);
  CHECK(memcmp(&got, &cfg, sizeof cfg) == 0);
  CHECK_STATUS(seawall_semaphore_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_semaphore_try_acquire(a, SEAWALL_PRIORITY_LOW, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(b, 1, 0, 1, 0);
  CHECK_STATUS(seawall_semaphore_release(b, p), SEAWALL_STATUS_OK);
  put_u32(mem + 12, get_u32(mem + 12) + 1); /* another region layout version */
  CHECK_STATUS(seawall_semaphore_attach(mem, size, &c), SEAWALL_STATUS_ABI_MISMATCH);
  CHECK_MESSAGE_HAS("region laid out by seawall region layout version 4");
  put_u32(mem + 12, get_u32(mem + 12) - 1);
  CHECK_STATUS(seawall_semaphore_attach(mem, size, &c), SEAWALL_STATUS_OK);
  seawall_semaphore_free(a);
  seawall_semaphore_free(b);
  seawall_semaphore_free(c);
  free(mem);
}

/* The same checks, shorter, for the budget, the throttle and the health window. */
static void shared_retry_and_health(void) {
  seawall_retry_budget_config bc = seawall_retry_budget_config_default(), bc2;
  seawall_retry_throttle_config tc = seawall_retry_throttle_config_default(), tc2;
  seawall_health_config hc = seawall_health_config_default(), hc2;
  seawall_retry_budget *b1 = NULL, *b2 = NULL, *bx = NULL;
  seawall_retry_throttle *t1 = NULL, *t2 = NULL, *tx = NULL;
  seawall_health *h1 = NULL, *h2 = NULL, *hx = NULL;
  seawall_retry_budget_snapshot bs;
  seawall_health_snapshot hs;
  uint64_t tokens;
  bool created, retry;
  unsigned char *mem;
  size_t size;
  char name[64];

  sprintf(name, "c-api-retry-%ld", (long)getpid());
  seawall_retry_budget_unlink_shared(name);
  seawall_retry_throttle_unlink_shared(name);
  seawall_health_unlink_shared(name);

  /* One name, three families: three files. */
  bc.min_retries_per_sec = 0;
  CHECK_STATUS(seawall_retry_budget_open_shared(name, &bc, &b1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_open_shared(name, &bc, &b2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_created(b2, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_retry_budget_deposit(b1, 10), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_balance(b2, 10, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.requests, 1);
  CHECK_U64(bs.balance_ppm, 200000);
  bc2 = bc;
  bc2.percent_can_retry_ppm = 300000;
  CHECK_STATUS(seawall_retry_budget_open_shared(name, &bc2, &bx), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("another configuration: retry_budget.percent_can_retry differs");
  CHECK(bx == NULL);

  CHECK_STATUS(seawall_retry_throttle_open_shared(name, &tc, &t1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_open_shared(name, &tc, &t2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_created(t1, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_retry_throttle_record_failure(t1, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_tokens(t2, &tokens, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 9000);
  tc2 = tc;
  tc2.token_ratio_milli = 101;
  CHECK_STATUS(seawall_retry_throttle_open_shared(name, &tc2, &tx), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("another configuration: retry_throttle.token_ratio differs");

  CHECK_STATUS(seawall_health_open_shared(name, &hc, &h1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_open_shared(name, &hc, &h2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_record(h1, SEAWALL_OUTCOME_FAILURE, 3 * MS, 10), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_get_snapshot(h2, 10, &hs), SEAWALL_STATUS_OK);
  CHECK_U64(hs.calls, 1);
  CHECK_U64(hs.errors, 1);
  CHECK(hs.status == SEAWALL_HEALTH_UNHEALTHY); /* 100 % errors */
  hc2 = hc;
  hc2.buckets = 11;
  CHECK_STATUS(seawall_health_open_shared(name, &hc2, &hx), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("another configuration: health.buckets differs");

  CHECK_STATUS(seawall_retry_budget_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_unlink_shared(name), SEAWALL_STATUS_OK);
  seawall_retry_budget_free(b1);
  seawall_retry_budget_free(b2);
  seawall_retry_throttle_free(t1);
  seawall_retry_throttle_free(t2);
  seawall_health_free(h1);
  seawall_health_free(h2);
  b1 = b2 = NULL;
  t1 = t2 = NULL;
  h1 = h2 = NULL;

  /* Caller memory big enough for any of them; each attach checks the family. */
  size = seawall_health_size();
  CHECK(seawall_retry_budget_size() <= size && seawall_retry_throttle_size() <= size);
  CHECK(seawall_retry_budget_align() == 128 && seawall_retry_throttle_align() == 128 &&
        seawall_health_align() == 128);
  mem = aligned_zeroed(size, 128);
  if (mem == NULL) return;
  CHECK_STATUS(seawall_retry_budget_attach(mem, size, &b1), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_STATUS(seawall_retry_budget_init_in(mem, seawall_retry_budget_size() - 1, &bc, &b1),
               SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_retry_budget_init_in(mem + 64, size, &bc, &b1), SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_retry_budget_init_in(mem, size, &bc, &b1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_attach(mem, size, &b2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_attach(mem, size, &t1), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("not a retry throttle");
  CHECK_STATUS(seawall_health_attach(mem, size, &h1), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_STATUS(seawall_retry_budget_deposit(b2, 1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_balance(b1, 1, &bs), SEAWALL_STATUS_OK);
  CHECK_U64(bs.requests, 1);
  seawall_retry_budget_free(b1);
  seawall_retry_budget_free(b2);

  CHECK_STATUS(seawall_retry_throttle_init_in(mem, seawall_retry_throttle_size() - 1, &tc, &t1),
               SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_retry_throttle_init_in(mem, size, &tc, &t1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_attach(mem, size, &t2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_budget_attach(mem, size, &b1), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_STATUS(seawall_retry_throttle_record_failure(t2, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_retry_throttle_tokens(t1, &tokens, NULL), SEAWALL_STATUS_OK);
  CHECK_U64(tokens, 9000);
  seawall_retry_throttle_free(t1);
  seawall_retry_throttle_free(t2);

  CHECK_STATUS(seawall_health_init_in(mem, size - 1, &hc, &h1), SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_health_init_in(mem, size, &hc, &h1), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_attach(mem, size, &h2), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_attach(mem, size - 1, &hx), SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_health_created(h2, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_health_record(h2, SEAWALL_OUTCOME_SUCCESS, 1 * MS, 10), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_get_snapshot(h1, 10, &hs), SEAWALL_STATUS_OK);
  CHECK_U64(hs.calls, 1);
  CHECK_U64(hs.errors, 0);
  put_u32(mem + 12, get_u32(mem + 12) + 1);
  CHECK_STATUS(seawall_health_attach(mem, size, &hx), SEAWALL_STATUS_ABI_MISMATCH);
  put_u32(mem + 12, get_u32(mem + 12) - 1);
  seawall_health_free(h1);
  seawall_health_free(h2);
  free(mem);
}

/* A worker killed while it holds a permit and waits with a ticket: its permit
 * is released and its ticket cancelled; a live process's permit stays. */
static void abandoned_semaphore_holders(void) {
  seawall_semaphore_config cfg = seawall_semaphore_config_default();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit mine, p;
  uint64_t permits = 99, tickets = 99;
  char name[64];
  pid_t child;
  int status = 0;

  cfg.max_concurrent = 2;
  cfg.max_queue = 2;
  sprintf(name, "c-api-sem-abandoned-%ld", (long)getpid());
  seawall_semaphore_unlink_shared(name);
  CHECK_STATUS(seawall_semaphore_open_shared(name, &cfg, &s), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_NORMAL, &mine, NULL),
               SEAWALL_STATUS_OK);
  child = fork();
  if (child == 0) {
    seawall_semaphore *cs = NULL;
    seawall_semaphore_permit cp;
    seawall_semaphore_ticket ct;
    if (seawall_semaphore_open_shared(name, &cfg, &cs) == SEAWALL_STATUS_OK &&
        seawall_semaphore_try_acquire(cs, SEAWALL_PRIORITY_NORMAL, &cp, NULL) ==
            SEAWALL_STATUS_OK &&
        seawall_semaphore_acquire_or_enqueue(cs, SEAWALL_PRIORITY_NORMAL, &cp, &ct, NULL) ==
            SEAWALL_STATUS_QUEUED) {
      kill(getpid(), SIGKILL); /* dies holding one permit and one ticket */
    }
    _exit(3);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  CHECK_OCCUPANCY(s, 2, 1, 2, 1);
  CHECK_STATUS(seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, &p, NULL, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_semaphore_reclaim_abandoned(s, &permits, &tickets), SEAWALL_STATUS_OK);
  CHECK_U64(permits, 1);
  CHECK_U64(tickets, 1);
  CHECK_OCCUPANCY(s, 1, 0, 1, 0); /* ours is left alone */
  CHECK_STATUS(seawall_semaphore_reclaim_abandoned(s, &permits, &tickets), SEAWALL_STATUS_OK);
  CHECK_U64(permits, 0);
  CHECK_U64(tickets, 0);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_NORMAL, &p, NULL),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, p), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_semaphore_release(s, mine), SEAWALL_STATUS_OK);
  CHECK_OCCUPANCY(s, 0, 0, 0, 0);
  seawall_semaphore_free(s);
  CHECK_STATUS(seawall_semaphore_unlink_shared(name), SEAWALL_STATUS_OK);
}

/* Nothing reached `capture` (stderr while the calls ran); closes it. */
static void check_printed_nothing(FILE *capture, const char *what) {
  char said[512];
  size_t n;
  fseek(capture, 0, SEEK_END);
  CHECK(ftell(capture) == 0);
  if (ftell(capture) != 0) {
    rewind(capture);
    n = fread(said, 1, sizeof said - 1, capture);
    said[n] = '\0';
    fprintf(stderr, "a call on %s printed: %s\n", what, said);
  }
  fclose(capture);
}

/* Shared region content is untrusted (DESIGN §8): over a structure whose bytes
 * seawall never wrote, every call returns within 1 s, with a status, and prints
 * nothing to stderr. The fill patterns are chosen by hand: 0xFE keeps every
 * permit slot's "held" bit clear (so a permit is still claimed) and the state
 * word reads as closed, so the record reaches the count window, whose size now
 * reads 0xFEFEFEFE; 0xFF makes the health window's bucket count 0xFFFFFFFF. */
/* A shared semaphore whose wait slots all read WAITING while its only permit is
 * held and no waiter is counted: no honest state has a waiting slot nobody
 * counts, and an arrival finds no free slot to wait in. Enqueueing and a 10 ms
 * wait must each answer SEAWALL_STATUS_REGION_CORRUPT within a second and print
 * nothing, instead of searching for a slot for ever. The state word is the
 * first word the acquire changes (the core semaphore comes first in the
 * region); every word after it up to the holder table gets
 * `WAITING | arrival 2 << 32`, which also reads as max_concurrent 1 and
 * max_queue 2 where the configuration lies. */
static void corrupted_semaphore_region(void) {
  size_t size = seawall_semaphore_size(), at = 0, end, i;
  seawall_semaphore_config sc = seawall_semaphore_config_default();
  seawall_semaphore *s = NULL;
  seawall_semaphore_permit held, p;
  seawall_semaphore_ticket t;
  seawall_status enq, wait;
  unsigned char *mem = NULL, *before = malloc(size);
  uint64_t t0, elapsed_ns, waiting = 1ull | (2ull << 32);
  FILE *capture = tmpfile();
  int saved;

  CHECK(capture != NULL && before != NULL);
  if (capture == NULL || before == NULL) return;
  sc.max_concurrent = 1;
  sc.max_queue = 2;
  CHECK(posix_memalign((void **)&mem, seawall_semaphore_align(), size) == 0);
  memset(mem, 0, size); /* padding the region never writes compares equal too */
  CHECK_STATUS(seawall_semaphore_init_in(mem, size, &sc, &s), SEAWALL_STATUS_OK);
  memcpy(before, mem, size);
  CHECK_STATUS(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_NORMAL, &held, NULL),
               SEAWALL_STATUS_OK);
  while (at < size && mem[at] == before[at]) at++;
  CHECK(at < size && at % 16 == 0);
  /* The next word the acquire changed is its holder slot, in the holder table
   * after the core: the fill stops there, so the table still has free slots
   * and the corruption is the core's alone. */
  end = at + 16;
  /* Padding the library copied from a Rust value reads as uninitialised to
   * valgrind; it compares equal in both images all the same. */
  SEAWALL_TEST_MAKE_DEFINED(mem, size);
  SEAWALL_TEST_MAKE_DEFINED(before, size);
  while (end + 8 <= size && memcmp(mem + end, before + end, 8) == 0) end += 8;
  CHECK(end + 8 <= size);
  for (i = at + 16; i < end; i += 8) memcpy(mem + i, &waiting, 8);

  fflush(stderr);
  saved = dup(2);
  dup2(fileno(capture), 2);
  alarm(30); /* a call that hangs for good ends the test (SIGALRM) */
  t0 = c_monotonic_ns();
  enq = seawall_semaphore_acquire_or_enqueue(s, SEAWALL_PRIORITY_NORMAL, &p, &t, NULL);
  wait = seawall_semaphore_acquire_timeout(s, SEAWALL_PRIORITY_NORMAL, 10 * MS, &p, NULL);
  elapsed_ns = c_monotonic_ns() - t0;
  alarm(0);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);

  CHECK_STATUS(enq, SEAWALL_STATUS_REGION_CORRUPT);
  CHECK_STATUS(wait, SEAWALL_STATUS_REGION_CORRUPT);
  CHECK(elapsed_ns < 1 * SEC);
  check_printed_nothing(capture, "a corrupted semaphore");
  seawall_semaphore_free(s);
  free(mem);
  free(before);
}

static void corrupted_regions(void) {
  size_t bsize = seawall_breaker_size(), hsize = seawall_health_size();
  seawall_breaker_config bc = count_config(4, 4);
  seawall_health_config hc = seawall_health_config_default();
  seawall_breaker *b = NULL;
  seawall_health *h = NULL;
  seawall_breaker_metrics m;
  seawall_health_snapshot hs;
  seawall_permit p;
  seawall_state st;
  seawall_status rec, acq, hrec, snap, q;
  unsigned char *bmem = NULL, *hmem = NULL;
  uint64_t t0, elapsed_ns, p99;
  FILE *capture = tmpfile();
  int saved;

  CHECK(capture != NULL);
  if (capture == NULL) return;
  CHECK(posix_memalign((void **)&bmem, seawall_breaker_align(), bsize) == 0);
  CHECK(posix_memalign((void **)&hmem, seawall_health_align(), hsize) == 0);
  CHECK_STATUS(seawall_breaker_init_in(bmem, bsize, &bc, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_health_init_in(hmem, hsize, &hc, &h), SEAWALL_STATUS_OK);
  memset(bmem, 0xFE, bsize);
  memset(hmem, 0xFF, hsize);

  fflush(stderr);
  saved = dup(2);
  dup2(fileno(capture), 2);
  alarm(30); /* a call that hangs for good ends the test (SIGALRM) */
  t0 = c_monotonic_ns();
  acq = seawall_breaker_try_acquire(b, 1 * MS, &p, NULL);
  rec = acq == SEAWALL_STATUS_OK
            ? seawall_breaker_record(b, p, SEAWALL_OUTCOME_FAILURE, 5, 2 * MS)
            : SEAWALL_STATUS_OK;
  (void)seawall_breaker_get_metrics(b, 3 * MS, &m);
  (void)seawall_breaker_state(b, &st);
  (void)seawall_breaker_reset(b);
  hrec = seawall_health_record(h, SEAWALL_OUTCOME_FAILURE, 7, 4 * MS);
  snap = seawall_health_get_snapshot(h, 5 * MS, &hs);
  q = seawall_health_quantile(h, 990000, 6 * MS, &p99);
  elapsed_ns = c_monotonic_ns() - t0;
  alarm(0);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);

  /* A permit table whose words all read as taken refuses with a status before
     the breaker is asked; one that reads as free admits, and the record finds
     the corruption. */
  CHECK(acq == SEAWALL_STATUS_OK || acq == SEAWALL_STATUS_PERMITS_EXHAUSTED);
  if (acq == SEAWALL_STATUS_OK) CHECK_STATUS(rec, SEAWALL_STATUS_REGION_CORRUPT);
  CHECK_STATUS(hrec, SEAWALL_STATUS_REGION_CORRUPT);
  CHECK_STATUS(snap, SEAWALL_STATUS_OK);
  CHECK_STATUS(q, SEAWALL_STATUS_OK);
  CHECK(elapsed_ns < 1 * SEC);
  check_printed_nothing(capture, "a corrupted region");
  seawall_breaker_free(b);
  seawall_health_free(h);
  free(bmem);
  free(hmem);
  corrupted_semaphore_region();
}

/* Every reserved field of an input is refused unless zero (DESIGN §8): a
 * program that sets one expects a meaning this library does not give it. */
static void reserved_fields_must_be_zero(void) {
  seawall_breaker_config cfg = count_config(4, 4);
  seawall_breaker *b = NULL;
  seawall_permit p;
  seawall_backoff_config bc = seawall_backoff_config_default();
  seawall_backoff_state bs = seawall_backoff_state_new(1);
  seawall_retry_config rc = seawall_retry_config_default();
  seawall_failed_attempt fa;
  seawall_retry_decision dec;
  seawall_health_config hc = seawall_health_config_default();
  seawall_health *h = NULL;
  seawall_rate_limiter_config lc = seawall_rate_limiter_config_default();
  seawall_rate_limiter *l = NULL;
  seawall_keyed_rate_limiter *kl = NULL;
  seawall_retry_budget_config rbc = seawall_retry_budget_config_default();
  seawall_retry_budget *rb = NULL;
  uint64_t delay = 0;

  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(b, 0, &p, NULL), SEAWALL_STATUS_OK);
  p.reserved = 1;
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 0),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("seawall_permit.reserved is reserved and must be 0, got 1");
  p.reserved = 0;
  /* The refusal spent nothing: the permit is still good once. */
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 0), SEAWALL_STATUS_OK);
  seawall_breaker_free(b);

  bc.reserved = 2;
  CHECK_STATUS(seawall_backoff_delay(&bc, 1, 0, 0, &delay), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_backoff_config.reserved");
  bc.reserved = 0;
  bs.reserved = 3;
  CHECK_STATUS(seawall_backoff_next_delay(&bc, &bs, SEAWALL_NONE, &delay),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_backoff_state.reserved");
  CHECK(bs.attempt == 0);

  memset(&fa, 0, sizeof fa);
  fa.attempt = 1;
  fa.deadline_remaining_ns = SEAWALL_NONE;
  fa.retry_after_ns = SEAWALL_NONE;
  CHECK_STATUS(seawall_retry_decide(&rc, &fa, NULL, NULL, 0, &dec), SEAWALL_STATUS_OK);
  rc.reserved = 4;
  CHECK_STATUS(seawall_retry_decide(&rc, &fa, NULL, NULL, 0, &dec),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_retry_config.reserved");
  rc.reserved = 0;
  rc.backoff.reserved = 5;
  CHECK_STATUS(seawall_retry_decide(&rc, &fa, NULL, NULL, 0, &dec),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_backoff_config.reserved");
  rc.backoff.reserved = 0;
  fa.reserved = 6;
  CHECK_STATUS(seawall_retry_decide(&rc, &fa, NULL, NULL, 0, &dec),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_failed_attempt.reserved");

  hc.reserved = 7;
  CHECK_STATUS(seawall_health_new(&hc, &h), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_health_config.reserved");
  CHECK(h == NULL);
  lc.reserved = 8;
  CHECK_STATUS(seawall_rate_limiter_new(&lc, &l), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_rate_limiter_config.reserved");
  CHECK(l == NULL);
  CHECK_STATUS(seawall_keyed_rate_limiter_new(&lc, &kl), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK(kl == NULL);
  rbc.reserved = 9;
  CHECK_STATUS(seawall_retry_budget_new(&rbc, &rb), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("seawall_retry_budget_config.reserved");
  CHECK(rb == NULL);
}

int main(void) {
  versions_and_clock();
  default_config();
  null_arguments();
  invalid_configs();
  breaker_lifecycle();
  permits_of_another_breaker_and_exhaustion();
  deadlines();
  status_values_and_names();
  defaults_of_the_other_primitives();
  null_arguments_of_the_other_primitives();
  invalid_configs_of_the_other_primitives();
  semaphore_protocol();
  semaphore_blocking_wait();
  retry_budget_by_hand();
  retry_throttle_by_hand();
  backoff_by_hand();
  retry_decision_by_hand();
  health_by_hand();
  reserved_fields_must_be_zero();
  if (seawall_shared_supported()) {
    caller_memory();
    named_regions();
    abandoned_permits();
    shared_semaphore();
    shared_retry_and_health();
    abandoned_semaphore_holders();
    corrupted_regions();
  } else {
    /* Only native lock-free atomics may be shared: everything is refused. */
    seawall_breaker_config cfg = count_config(4, 4);
    seawall_breaker *b = NULL;
    seawall_semaphore_config scfg = seawall_semaphore_config_default();
    seawall_semaphore *s = NULL;
    printf("api: no native 128-bit atomics here: checking that sharing is refused\n");
    CHECK_STATUS(seawall_breaker_open_shared("c-api-refused", &cfg, &b),
                 SEAWALL_STATUS_NOT_LOCK_FREE);
    CHECK_STATUS(seawall_semaphore_open_shared("c-api-refused", &scfg, &s),
                 SEAWALL_STATUS_NOT_LOCK_FREE);
  }
  return report("api");
}
